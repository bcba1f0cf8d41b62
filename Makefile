# SPDX-License-Identifier: GPL-2.0
#
# make                  build htw.ko against the running kernel's headers
# make KDIR=<dir>       ... against another kernel build tree
# make check            lint, then htw in UML and in Debian's kernels
# make run              boot Debian's kernel under QEMU with htw, run the demo
# make lint             checkpatch --strict and a sparse build
#
# Variables of the rig (rig/lib.sh has the details):
#   HTW_CACHE    kernels, sources, packages (shared by every checkout)
#   HTW_BUILD    this checkout's build products and results
#   HTW_TIERS    tiers of rig/tiers that "make check" runs (default: all)
#   HTW_INJECT   kunit, user or warn: compile in a deliberate failure
#   HTW_TIMEOUT  seconds a guest may run
#   HTW_JOBS     parallel jobs of each kernel or module build
KDIR ?= /lib/modules/$(shell uname -r)/build

HTW_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/htw
HTW_BUILD ?= $(CURDIR)/build
HTW_JOBS ?= 2
HTW_TIMEOUT ?= 300
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

check:
	rig/check.sh

run:
	rig/run.sh

lint:
	rig/deps.sh
	rig/lint.sh

# The packages the rig needs (make check and make run do this themselves).
deps:
	rig/deps.sh

distclean:
	rm -rf $(HTW_BUILD)

.PHONY: all modules clean check run lint deps distclean
