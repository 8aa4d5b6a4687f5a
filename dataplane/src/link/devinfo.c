// SPDX-License-Identifier: Apache-2.0
/*
 * Device Information files (the Network Plumbing Working Group's Device
 * Information specification): a device plugin (dp/) or a CNI plugin (cni/)
 * writes one small JSON file per device it handed out, e.g.
 *   {"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:3b:02.1"}}
 * under /var/run/k8s.cni.cncf.io/devinfo, which Multus and the SR-IOV
 * plugins write. A pod that mounts the directory finds its VF there without
 * PCIDEVICE_* in its environment. Only the "pci-address" member is read;
 * the files are machine-written and small, so a scan for that key does,
 * with every byte of the address checked before it names a sysfs path.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfs/netdev.h"

#define DEVINFO_MAX (64u << 10) /* bytes of a file read */
#define DEVINFO_FILES 64 /* files per subdirectory looked at */

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The "pci-address" string of JSON @buf into @addr: 0 or -ENOENT. */
static int pci_address(const char *buf, char *addr, size_t n)
{
	const char *p = strstr(buf, "\"pci-address\"");
	size_t len = 0;

	if (!p)
		return -ENOENT;
	p += strlen("\"pci-address\"");
	p += strspn(p, " \t\r\n");
	if (*p++ != ':')
		return -ENOENT;
	p += strspn(p, " \t\r\n");
	if (*p++ != '"')
		return -ENOENT;
	/* DDDD:BB:DD.F: hex digits, ':' and '.' only, so it is a path
	 * component and nothing else. */
	while (p[len] && p[len] != '"' && len + 1 < n && strchr("0123456789abcdefABCDEF:.", p[len]))
		len++;
	if (!len || p[len] != '"')
		return -ENOENT;
	memcpy(addr, p, len);
	addr[len] = '\0';
	return 0;
}

/* @path's first DEVINFO_MAX bytes, NUL-terminated (malloc'd), or NULL. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = f ? malloc(DEVINFO_MAX + 1) : NULL;
	size_t got = buf ? fread(buf, 1, DEVINFO_MAX, f) : 0;

	if (f)
		fclose(f);
	if (buf)
		buf[got] = '\0';
	return buf;
}

/* The *.json names of @dir, sorted, into @names (malloc'd each): how many. */
static int json_files(const char *dir, char **names, int max)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int k = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && k < max) {
		size_t l = strlen(de->d_name);

		if (de->d_name[0] != '.' && l > 5 && !strcmp(de->d_name + l - 5, ".json"))
			names[k++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, (size_t)k, sizeof(*names), cmp_name);
	return k;
}

int pfs_devinfo_netdev(const char *dir, const char *sysfs, char *out, size_t n, char *why,
		       size_t wn)
{
	static const char *const subs[] = { "dp", "cni" };
	int rc = -ENOENT;

	for (size_t s = 0; s < 2 && rc; s++) {
		char sub[512], *names[DEVINFO_FILES];
		int k;

		snprintf(sub, sizeof(sub), "%s/%s", dir, subs[s]);
		k = json_files(sub, names, DEVINFO_FILES);
		for (int i = 0; i < k; i++) {
			char path[1024], addr[32], *buf;
			int r;

			snprintf(path, sizeof(path), "%s/%s", sub, names[i]);
			buf = rc ? slurp(path) : NULL;
			if (buf && !pci_address(buf, addr, sizeof(addr))) {
				r = pfs_netdev_pci(sysfs, addr, out, n);
				if (!r)
					snprintf(why, wn, "%.480s -> %s/bus/pci/devices/%s/net/%s",
						 path, sysfs, addr, out);
				else
					snprintf(why, wn,
						 "%.480s: PCI device %s has no netdev under "
						 "%s/bus/pci/devices/%s/net (bound to vfio-pci, or "
						 "not a network function)",
						 path, addr, sysfs, addr);
				rc = r ? (r == -ENAMETOOLONG ? r : -ENODEV) : 0;
			}
			free(buf);
			free(names[i]);
		}
	}
	return rc;
}
