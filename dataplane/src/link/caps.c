// SPDX-License-Identifier: Apache-2.0
/*
 * Capability checks for the AF_XDP link: capget(2) on the calling thread,
 * no libcap. Stateless; any thread.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

#include "pfs/caps.h"

uint64_t pfs_caps_effective(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return 0;
	return (uint64_t)d[0].effective | (uint64_t)d[1].effective << 32;
}

char *pfs_caps_names(uint64_t mask, char *buf, size_t n)
{
	static const struct {
		int cap;
		const char *name;
	} names[] = {
		{ CAP_NET_ADMIN, "CAP_NET_ADMIN" },
		{ CAP_NET_RAW, "CAP_NET_RAW" },
		{ CAP_BPF, "CAP_BPF" },
		{ CAP_IPC_LOCK, "CAP_IPC_LOCK" },
		{ CAP_SYS_ADMIN, "CAP_SYS_ADMIN" },
		{ CAP_PERFMON, "CAP_PERFMON" },
		{ CAP_SYS_RESOURCE, "CAP_SYS_RESOURCE" },
	};
	size_t len = 0;

	if (n)
		buf[0] = '\0';
	for (int c = 0; c < 64 && len < n; c++) {
		const char *name = NULL;
		char tmp[16];
		int w;

		if (!(mask & PFS_CAP(c)))
			continue;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (names[i].cap == c)
				name = names[i].name;
		if (!name) {
			snprintf(tmp, sizeof(tmp), "cap_%d", c);
			name = tmp;
		}
		w = snprintf(buf + len, n - len, "%s%s", len ? "," : "", name);
		if (w < 0)
			break;
		len += (size_t)w;
	}
	return buf;
}

int pfs_caps_require(uint64_t want, const char *what, char *why, size_t n)
{
	uint64_t miss = pfs_caps_missing(want, pfs_caps_effective());
	char names[128];

	if (!miss)
		return 0;
	snprintf(why, n, "missing %s (needed to %s)", pfs_caps_names(miss, names, sizeof(names)),
		 what);
	return -EPERM;
}
