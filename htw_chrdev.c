// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/htw: timers of the wheel for user space
 */

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>

#include <uapi/linux/htw.h>

#include "htw_core.h"

static const struct file_operations htw_fops = {
	.owner		= THIS_MODULE,
	.llseek		= noop_llseek,
};

static struct miscdevice htw_misc = {
	.minor		= MISC_DYNAMIC_MINOR,
	.name		= "htw",
	.fops		= &htw_fops,
	.mode		= 0666,
};

module_misc_device(htw_misc);

MODULE_DESCRIPTION("Hierarchical timing wheel and its /dev/htw device");
MODULE_LICENSE("GPL");
