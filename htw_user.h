/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The memory of /dev/htw each user holds, across all of the user's files
 *
 * An account is a kuid: every file charges its timers, and its wheels, in
 * bytes, to the account of the kuid that opened it, whichever process
 * holds the file, and to the account of each owner of the user namespaces
 * above the opener's (see htw_user.c).
 */
#ifndef _HTW_USER_H
#define _HTW_USER_H

#include <linux/uidgid.h>

struct htw_user;
struct user_namespace;

struct htw_user *htw_user_get(struct user_namespace *ns, kuid_t uid);
void htw_user_put(struct htw_user *user);
int htw_user_charge(struct htw_user *user, unsigned long nr,
		    unsigned long limit);
void htw_user_uncharge(struct htw_user *user, unsigned long nr);
unsigned long htw_user_bytes(struct htw_user *user);
int htw_user_init(void);
void htw_user_exit(void);

#endif /* _HTW_USER_H */
