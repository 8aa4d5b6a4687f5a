// SPDX-License-Identifier: Apache-2.0
/*
 * Interface resolution and neighbour lookup for the AF_XDP link (see
 * pfs/netdev.h). Runs once at start-up on the control thread; every
 * function opens and closes its own sockets. pfs_netdev_resolve is pure
 * apart from reading the (possibly fake) sysfs root it is given.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "pfs/netdev.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The variables of @env starting with @prefix, sorted; returns how many. */
static size_t env_matching(char *const *env, const char *prefix, const char **out, size_t max)
{
	size_t k = 0, pl = strlen(prefix);

	for (size_t i = 0; env && env[i] && k < max; i++)
		if (!strncmp(env[i], prefix, pl) && strchr(env[i] + pl, '='))
			out[k++] = env[i];
	qsort(out, k, sizeof(*out), cmp_str);
	return k;
}

/* First comma-separated item of @list (trimmed) into @out. */
static int first_item(const char *list, size_t skip, char *out, size_t n)
{
	const char *s = list, *e;
	size_t len;

	for (size_t i = 0; i < skip && s; i++) {
		s = strchr(s, ',');
		if (s)
			s++;
	}
	if (!s)
		return -ENOENT;
	while (*s == ' ')
		s++;
	e = s + strcspn(s, ",");
	while (e > s && e[-1] == ' ')
		e--;
	len = (size_t)(e - s);
	if (!len)
		return -ENOENT;
	if (len >= n)
		return -ENAMETOOLONG;
	memcpy(out, s, len);
	out[len] = '\0';
	return 0;
}

int pfs_netdev_pci(const char *sysfs, const char *addr, char *out, size_t n)
{
	char path[512];
	struct dirent *de;
	DIR *d;
	int rc = -ENODEV;

	if (strchr(addr, '/') || snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/net", sysfs,
					  addr) >= (int)sizeof(path))
		return -EINVAL;
	d = opendir(path);
	if (!d)
		return -ENODEV;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (strlen(de->d_name) >= n || strlen(de->d_name) >= IF_NAMESIZE) {
			rc = -ENAMETOOLONG;
			break;
		}
		strcpy(out, de->d_name);
		rc = 0;
		break;
	}
	closedir(d);
	return rc;
}

/* Variables whose value is a list of interface names: ours (the PacketFS
 * device plugin), then the AF_XDP device plugin's. */
static const char *const list_prefixes[] = { "PFS_DATA_LINK_", "AFXDP_DEVICES_" };

/* The first item of the alphabetically first @prefix variable that has
 * one: 0 (with @why), -ENOENT, -ENAMETOOLONG. */
static int first_of_lists(char *const *env, const char *prefix, char *out, size_t n, char *why,
			  size_t wn)
{
	const char *vars[32];
	size_t k = env_matching(env, prefix, vars, 32);

	for (size_t i = 0; i < k; i++) {
		const char *val = strchr(vars[i], '=') + 1;
		int rc = first_item(val, 0, out, n < IF_NAMESIZE ? n : IF_NAMESIZE);

		if (rc == -ENAMETOOLONG)
			return rc;
		if (!rc) {
			snprintf(why, wn, "%s -> %s", vars[i], out);
			return 0;
		}
	}
	return -ENOENT;
}

/* PFS_DEVINFO_DIR from @env, else the directory Multus and the SR-IOV
 * plugin write Device Information files to. */
static const char *devinfo_dir(char *const *env)
{
	static const char key[] = "PFS_DEVINFO_DIR=";

	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], key, sizeof(key) - 1) && env[i][sizeof(key) - 1])
			return env[i] + sizeof(key) - 1;
	return PFS_DEVINFO_DIR;
}

int pfs_netdev_resolve(const char *flag, char *const *env, const char *sysfs, char *out, size_t n,
		       char *why, size_t wn)
{
	const char *vars[32];
	size_t k;
	int rc;

	if (flag && *flag) {
		if (strlen(flag) >= n || strlen(flag) >= IF_NAMESIZE)
			return -ENAMETOOLONG;
		strcpy(out, flag);
		snprintf(why, wn, "--ifname %s", flag);
		return 0;
	}
	for (int p = 0; p < 2; p++) {
		rc = first_of_lists(env, list_prefixes[p], out, n, why, wn);
		if (rc != -ENOENT)
			return rc;
	}
	k = env_matching(env, "PCIDEVICE_", vars, 32);
	rc = -ENOENT;
	for (size_t i = 0; i < k; i++) {
		const char *val = strchr(vars[i], '=') + 1;
		char addr[64];

		for (size_t j = 0; !first_item(val, j, addr, sizeof(addr)); j++) {
			int r = pfs_netdev_pci(sysfs, addr, out, n);

			if (!r) {
				snprintf(why, wn, "%s -> %s/bus/pci/devices/%s/net/%s", vars[i],
					 sysfs, addr, out);
				return 0;
			}
			snprintf(why, wn,
				 "%s: PCI device %s has no netdev under %s/bus/pci/devices/"
				 "%s/net (bound to vfio-pci, or not a network function)",
				 vars[i], addr, sysfs, addr);
			rc = r == -ENAMETOOLONG ? r : -ENODEV;
		}
	}
	if (rc == -ENOENT)
		rc = pfs_devinfo_netdev(devinfo_dir(env), sysfs, out, n, why, wn);
	if (rc == -ENOENT)
		snprintf(why, wn,
			 "no interface: pass --ifname, or run with PFS_DATA_LINK_<POOL> (the "
			 "PacketFS device plugin), AFXDP_DEVICES_<POOL> (afxdp device plugin) or "
			 "PCIDEVICE_<RESOURCE> (SR-IOV device plugin) set, or a Device Information "
			 "file under %.200s",
			 devinfo_dir(env));
	return rc;
}

int pfs_netdev_hwaddr(const char *ifname, uint8_t mac[6])
{
	struct ifreq ifr;
	int fd, rc = 0;

	if (strlen(ifname) >= IF_NAMESIZE)
		return -ENAMETOOLONG;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		rc = -errno;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
	return rc;
}

static socklen_t fill_sa(struct sockaddr_storage *ss, int family, const uint8_t *ip, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		memcpy(&s4->sin_addr, ip, 4);
		return sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		memcpy(&s6->sin6_addr, ip, 16);
		return sizeof(*s6);
	}
}

/* A UDP socket connected to @ip:@port, bound to @ifname when allowed. */
static int udp_connected(const char *ifname, int family, const uint8_t *ip, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t sl = fill_sa(&ss, family, ip, port);
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* Best effort: SO_BINDTODEVICE wants CAP_NET_RAW, which senders have. */
	if (ifname)
		(void)setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname,
				 (socklen_t)strlen(ifname));
	if (connect(fd, (struct sockaddr *)&ss, sl)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

int pfs_netdev_src_ip(const char *ifname, int family, const uint8_t *dst, uint8_t *src)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = udp_connected(ifname, family, dst, 9);

	if (fd < 0)
		return fd;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		int e = -errno;

		close(fd);
		return e;
	}
	close(fd);
	if (family == AF_INET)
		memcpy(src, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	else
		memcpy(src, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	return 0;
}

/* One RTM_GETNEIGH dump: 0 found, -ENOENT not (yet) there, -errno. */
static int neigh_dump(int ifindex, int family, const uint8_t *ip, uint8_t mac[6])
{
	struct {
		struct nlmsghdr nh;
		struct ndmsg ndm;
	} req;
	static _Thread_local char buf[32768];
	size_t alen = family == AF_INET ? 4 : 16;
	int fd, rc = -ENOENT;
	bool done = false;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ndmsg));
	req.nh.nlmsg_type = RTM_GETNEIGH;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.nh.nlmsg_seq = 1;
	req.ndm.ndm_family = (uint8_t)family;
	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0) {
		rc = -errno;
		goto out_close;
	}
	while (!done) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh;

		if (len < 0) {
			rc = -errno;
			break;
		}
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)len);
		     nh = NLMSG_NEXT(nh, len)) {
			struct ndmsg *nd = NLMSG_DATA(nh);
			struct rtattr *a;
			int alen_left;
			const uint8_t *dst = NULL, *ll = NULL;

			if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR) {
				done = true;
				break;
			}
			if (nh->nlmsg_type != RTM_NEWNEIGH || nd->ndm_ifindex != ifindex ||
			    !(nd->ndm_state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE |
					       NUD_PERMANENT | NUD_NOARP)))
				continue;
			alen_left = (int)RTM_PAYLOAD(nh);
			for (a = RTM_RTA(nd); RTA_OK(a, alen_left); a = RTA_NEXT(a, alen_left)) {
				if (a->rta_type == NDA_DST && RTA_PAYLOAD(a) == alen)
					dst = RTA_DATA(a);
				else if (a->rta_type == NDA_LLADDR && RTA_PAYLOAD(a) == 6)
					ll = RTA_DATA(a);
			}
			if (dst && ll && !memcmp(dst, ip, alen) && rc) {
				memcpy(mac, ll, 6);
				rc = 0; /* keep reading to drain the dump */
			}
		}
	}
out_close:
	close(fd);
	return rc;
}

int pfs_netdev_next_hop(int family, const uint8_t *dst, uint8_t *hop, int *oif)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		char attrs[64];
	} req;
	static _Thread_local char buf[8192];
	size_t alen = family == AF_INET ? 4 : 16;
	struct rtattr *a;
	ssize_t len;
	int fd, rc = -ENETUNREACH;

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	req.nh.nlmsg_type = RTM_GETROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nh.nlmsg_seq = 1;
	req.rt.rtm_family = (uint8_t)family;
	req.rt.rtm_dst_len = (uint8_t)(alen * 8);
	a = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
	a->rta_type = RTA_DST;
	a->rta_len = (unsigned short)RTA_LENGTH(alen);
	memcpy(RTA_DATA(a), dst, alen);
	req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(a->rta_len);
	memcpy(hop, dst, alen); /* on-link unless a gateway says otherwise */
	if (oif)
		*oif = 0;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0 || (len = recv(fd, buf, sizeof(buf), 0)) < 0) {
		rc = -errno;
		goto out_close;
	}
	for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)len);
	     nh = NLMSG_NEXT(nh, len)) {
		struct rtmsg *rt = NLMSG_DATA(nh);
		int left;

		if (nh->nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr *e = NLMSG_DATA(nh);

			rc = e->error ? e->error : -ENETUNREACH;
			break;
		}
		if (nh->nlmsg_type != RTM_NEWROUTE)
			continue;
		rc = 0;
		left = (int)RTM_PAYLOAD(nh);
		for (a = RTM_RTA(rt); RTA_OK(a, left); a = RTA_NEXT(a, left)) {
			if (a->rta_type == RTA_GATEWAY && RTA_PAYLOAD(a) == alen)
				memcpy(hop, RTA_DATA(a), alen);
			else if (a->rta_type == RTA_OIF && oif && RTA_PAYLOAD(a) == sizeof(int))
				memcpy(oif, RTA_DATA(a), sizeof(int));
		}
		break;
	}
out_close:
	close(fd);
	return rc;
}

int pfs_neigh_resolve(int ifindex, const char *ifname, int family, const uint8_t *ip,
		      uint8_t mac[6], int timeout_ms)
{
	struct timespec t0, now;
	int rc, nudged = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		rc = neigh_dump(ifindex, family, ip, mac);
		if (rc != -ENOENT)
			return rc;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >=
		    timeout_ms)
			return -ETIMEDOUT;
		if (nudged++ % 20 == 0) { /* once a second */
			int fd = udp_connected(ifname, family, ip, 9);

			if (fd >= 0) {
				(void)send(fd, "", 0, MSG_DONTWAIT);
				close(fd);
			}
		}
		usleep(50000);
	}
}
