/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * htw.h - user-space ABI of /dev/htw, the hierarchical timing wheel device
 */
#ifndef _UAPI_LINUX_HTW_H
#define _UAPI_LINUX_HTW_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define HTW_ABI_VERSION	1

#endif /* _UAPI_LINUX_HTW_H */
