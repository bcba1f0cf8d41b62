// SPDX-License-Identifier: GPL-2.0
/*
 * User-space tests of /dev/htw.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"

#define HTW_DEV "/dev/htw"

TEST(device_is_a_char_device_open_to_all)
{
	struct stat st;

	ASSERT_EQ(0, stat(HTW_DEV, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0666, st.st_mode & 0777);
}

TEST(open_and_close)
{
	int fd = open(HTW_DEV, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd);
	EXPECT_EQ(0, close(fd));
}

TEST_HARNESS_MAIN
