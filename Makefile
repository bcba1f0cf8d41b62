# SPDX-License-Identifier: GPL-2.0
#
# make                  build htw.ko against the running kernel's headers
# make KDIR=<dir>       ... against another kernel build tree
# make lib              build libhtw (static and shared) and its pkg-config
#                       file, into build/lib
# make tools            build libhtw, htwctl and the ring timers' demo
#                       htw_idle for this machine, into build/lib and
#                       build/tools
# make install          install htw.ko (then depmod), the uapi header,
#                       libhtw with its header, pkg-config file and manual
#                       pages, htwctl and htw_idle; DESTDIR, PREFIX
#                       (/usr/local) and LIBDIR (PREFIX/lib) as usual
# make install-user     the same but htw.ko
# make deb              the Debian packages (htw-dkms, libhtw1, libhtw-dev,
#                       htw-tools) into build/deb, held to lintian
# make check            lint, htw in UML and Debian 6.12 and 7.2, make
#                       install, the rig's self-test
# make check-full       htw in the other kernels (6.1, UML 7.2, 7.2-rt,
#                       a debug UML)
# make run              boot Debian's kernel under QEMU with htw, run the demo
# make bench            htw against timer_list, hrtimer, timerfd, libevent
#                       and io_uring, in UML and under QEMU; prints one
#                       table and draws charts (never gates)
# make lint             checkpatch --strict and a sparse build
#
# Variables of the rig (rig/lib.sh has the details):
#   HTW_CACHE    kernels, sources, packages (shared by every checkout)
#   HTW_BUILD    this checkout's build products and results
#   HTW_TIERS    tiers of rig/tiers to run (default: make check's quick
#                tiers, or for check-full the others)
#   HTW_INJECT   kunit, user or warn: compile in a deliberate failure
#   HTW_TIMEOUT  seconds a guest may run (300; 1200 in make check-full)
#   HTW_JOBS     parallel jobs of each kernel or module build
KDIR ?= /lib/modules/$(shell uname -r)/build
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
DESTDIR ?=
CC ?= cc
AR ?= ar
CFLAGS ?= -O2 -g -Wall
LDFLAGS ?=

HTW_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/htw
HTW_BUILD ?= $(CURDIR)/build
HTW_JOBS ?= 2
HTW_TIMEOUT ?=
HTW_INJECT ?=
export HTW_CACHE HTW_BUILD HTW_JOBS HTW_TIMEOUT HTW_INJECT
ifdef HTW_TIERS
export HTW_TIERS
endif

all: modules

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean

# libhtw: its soname follows LIBHTW_VERSION_MAJOR, its symbols lib/libhtw.map.
# (DKMS builds the module from a tree without lib/.)
LIBHTW_VERSION := $(if $(wildcard lib/libhtw.h),$(shell sed -n \
	's/^\#define LIBHTW_VERSION_\(MAJOR\|MINOR\)[[:space:]]*//p' \
	lib/libhtw.h | paste -sd.))
LIBHTW_MAJOR := $(firstword $(subst ., ,$(LIBHTW_VERSION)))
LIBHTW_SO := libhtw.so.$(LIBHTW_MAJOR)
LIB_OUT := $(HTW_BUILD)/lib
LIB_SRCS := lib/libhtw.c lib/htw_timeouts.c
LIB_OBJS := $(patsubst lib/%.c,$(LIB_OUT)/%.o,$(LIB_SRCS))
LIB_DEPS := $(LIB_SRCS) lib/libhtw.h lib/libhtw.map include/uapi/linux/htw.h

lib: $(LIB_OUT)/libhtw.a $(LIB_OUT)/$(LIBHTW_SO) $(LIB_OUT)/libhtw.pc

$(LIB_OUT)/%.o: lib/%.c lib/libhtw.h include/uapi/linux/htw.h
	mkdir -p $(@D)
	$(CC) $(CFLAGS) -Iinclude/uapi -c -o $@ $<

$(LIB_OUT)/libhtw.a: $(LIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $(LIB_OBJS)

$(LIB_OUT)/$(LIBHTW_SO): $(LIB_DEPS)
	mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -fPIC -shared -Iinclude/uapi \
		-Wl,-soname,$(LIBHTW_SO) -Wl,--version-script=lib/libhtw.map \
		-o $@ $(LIB_SRCS)

# The paths are make's variables: "make install" writes it again, with its own.
LIBHTW_PC = sed -e 's|@prefix@|$(PREFIX)|' -e 's|@libdir@|$(LIBDIR)|' \
	-e 's|@includedir@|$(INCLUDEDIR)|' -e 's|@version@|$(LIBHTW_VERSION)|' \
	lib/libhtw.pc.in

$(LIB_OUT)/libhtw.pc: lib/libhtw.pc.in lib/libhtw.h
	mkdir -p $(@D)
	$(LIBHTW_PC) >$@

tools: lib $(HTW_BUILD)/tools/htwctl $(HTW_BUILD)/tools/htw_idle

# htwctl carries libhtw in it: it runs wherever it is copied.
$(HTW_BUILD)/tools/htwctl: tools/htwctl.c tools/htw_duration.h $(LIB_OUT)/libhtw.a
	mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -Iinclude/uapi -Ilib -o $@ $< \
		$(LIB_OUT)/libhtw.a

# The ring timers' demo, htw_idle: "make install" installs it beside htwctl.
$(HTW_BUILD)/tools/htw_idle: tools/htw_idle.c tools/htw_duration.h $(LIB_OUT)/libhtw.a
	mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -Iinclude/uapi -Ilib -o $@ $< \
		$(LIB_OUT)/libhtw.a -lpthread

# htw.ko alone (HTW_ONLY), into /lib/modules/<release>/updates under
# DESTDIR; depmod then indexes that tree.  Then what user space takes.
install: tools
	$(MAKE) -C $(KDIR) M=$(CURDIR) HTW_ONLY=1 modules
	$(MAKE) -C $(KDIR) M=$(CURDIR) HTW_ONLY=1 INSTALL_MOD_PATH=$(DESTDIR) \
		INSTALL_MOD_DIR=updates modules_install
	depmod $(if $(DESTDIR),-b $(DESTDIR)) \
		$$(cat $(KDIR)/include/config/kernel.release)
	$(MAKE) install-user
	$(if $(DESTDIR),,ldconfig)

# What user space takes, without the module (the Debian packages' way):
# the uapi header, libhtw with its header, pkg-config file and manual
# pages, htwctl and htw_idle, and their manual pages.
install-user: tools
	install -D -m 0644 include/uapi/linux/htw.h \
		$(DESTDIR)$(INCLUDEDIR)/linux/htw.h
	install -D -m 0755 $(HTW_BUILD)/tools/htwctl \
		$(DESTDIR)$(PREFIX)/bin/htwctl
	install -D -m 0644 lib/libhtw.h $(DESTDIR)$(INCLUDEDIR)/libhtw.h
	install -D -m 0644 $(LIB_OUT)/libhtw.a $(DESTDIR)$(LIBDIR)/libhtw.a
	install -D -m 0755 $(LIB_OUT)/$(LIBHTW_SO) \
		$(DESTDIR)$(LIBDIR)/$(LIBHTW_SO)
	ln -sf $(LIBHTW_SO) $(DESTDIR)$(LIBDIR)/libhtw.so
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig
	$(LIBHTW_PC) >$(DESTDIR)$(LIBDIR)/pkgconfig/libhtw.pc
	install -d $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man4
	install -m 0644 man/*.3 $(DESTDIR)$(MANDIR)/man3
	install -m 0644 man/*.4 $(DESTDIR)$(MANDIR)/man4
	install -D -m 0755 $(HTW_BUILD)/tools/htw_idle \
		$(DESTDIR)$(PREFIX)/bin/htw_idle
	install -d $(DESTDIR)$(MANDIR)/man1
	install -m 0644 man/*.1 $(DESTDIR)$(MANDIR)/man1

check:
	HTW_FULL=0 rig/check.sh

# The tiers "make check" leaves out (6.1, 7.2 in UML, PREEMPT_RT, debug UML).
check-full:
	HTW_FULL=1 rig/check.sh

run:
	rig/run.sh

bench:
	rig/bench.sh

# htw's Debian packages (htw-dkms, libhtw1, libhtw-dev, htw-tools), built
# and held to lintian, into build/deb.
deb:
	rig/deb.sh

lint:
	rig/deps.sh
	rig/lint.sh

# The packages the rig needs (make check and make run do this themselves).
deps:
	rig/deps.sh

distclean:
	rm -rf $(HTW_BUILD)

.PHONY: all modules clean lib tools install install-user check check-full run \
	bench deb lint deps distclean
