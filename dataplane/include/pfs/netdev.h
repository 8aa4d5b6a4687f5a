/* SPDX-License-Identifier: Apache-2.0 */
/* Which interface the AF_XDP link uses and who is on the other end of it:
 * the netdev from a flag or from what the operator's device plugins put in
 * the environment, its MAC, the source address the kernel would use toward
 * a peer, and the peer's MAC from the kernel's neighbour table. */
#ifndef PFS_NETDEV_H
#define PFS_NETDEV_H

#include <stddef.h>
#include <stdint.h>

/* pfs_netdev_resolve - the interface name to use, in this order:
 *   1. @flag (--ifname), when not NULL/empty;
 *   2. PFS_DATA_LINK_<POOL>=if0  (our device plugin): the first name;
 *   3. AFXDP_DEVICES_<POOL>=if0,if1  (afxdp device plugin): the first name;
 *   4. PCIDEVICE_<RESOURCE>=0000:3b:02.0,...  (SR-IOV device plugin): the
 *      netdev of the first PCI address that has one, read from
 *      @sysfs/bus/pci/devices/<addr>/net/<ifname>.
 *   5. a Device Information file (NPWG spec) under PFS_DEVINFO_DIR from
 *      @env, else /var/run/k8s.cni.cncf.io/devinfo (dp/ then cni/, by name):
 *      the netdev of the first "pci-address" one names, as in 4;
 * Among several variables of one kind, the alphabetically first wins.
 * @env: "NAME=value" strings, NULL-terminated (environ); @sysfs: "/sys", or
 * a fake root in tests. Writes the name to @out and how it was chosen to
 * @why ("AFXDP_DEVICES_POOL1=veth0,veth1 -> veth0"). 0, or -ENOENT (nothing
 * set; @why says what was looked for), -ENAMETOOLONG, -ENODEV (a PCI address
 * without a net/ entry: the VF is bound to vfio or absent; @why names it). */
int pfs_netdev_resolve(const char *flag, char *const *env, const char *sysfs, char *out, size_t n,
		       char *why, size_t wn);

#define PFS_DEVINFO_DIR "/var/run/k8s.cni.cncf.io/devinfo"

/* pfs_netdev_pci - the single entry of @sysfs/bus/pci/devices/@addr/net/
 * (the netdev of a PCI function). 0, -ENODEV (none: bound to vfio-pci, or
 * not a network function), -EINVAL (@addr has a '/'), -ENAMETOOLONG. */
int pfs_netdev_pci(const char *sysfs, const char *addr, char *out, size_t n);

/* pfs_devinfo_netdev - step 5 of pfs_netdev_resolve: the Device Information
 * files (*.json) of @dir/dp and @dir/cni, by name; the first whose
 * "pci-address" has a netdev under @sysfs. 0 (with @why), -ENOENT (no file
 * names a PCI address), -ENODEV (@why names the address without a netdev). */
int pfs_devinfo_netdev(const char *dir, const char *sysfs, char *out, size_t n, char *why,
		       size_t wn);

/* pfs_netdev_hwaddr - the MAC of @ifname in the current network namespace.
 * 0 or -errno (ENODEV). */
int pfs_netdev_hwaddr(const char *ifname, uint8_t mac[6]);

/* pfs_netdev_src_ip - the source address the kernel routes toward @dst
 * (@family AF_INET: 4 bytes, AF_INET6: 16) out of @ifname, found with a
 * connected UDP socket (no packet is sent). 0 or -errno (ENETUNREACH). */
int pfs_netdev_src_ip(const char *ifname, int family, const uint8_t *dst, uint8_t *src);

/* pfs_netdev_next_hop - the address whose MAC frames to @dst must carry:
 * the route's gateway, or @dst itself when it is on-link (netlink
 * RTM_GETROUTE in the current network namespace). @oif (may be NULL): the
 * route's output interface index. 0, or -ENETUNREACH / -errno. */
int pfs_netdev_next_hop(int family, const uint8_t *dst, uint8_t *hop, int *oif);

/* pfs_neigh_resolve - the MAC of @ip on @ifindex from the neighbour table
 * (netlink RTM_GETNEIGH). When absent, nudges the kernel to resolve it (one
 * empty UDP datagram to port 9, discard, through the normal stack: ARP or
 * neighbour discovery follow) and polls until @timeout_ms. 0, or -ETIMEDOUT,
 * -errno of the netlink socket. */
int pfs_neigh_resolve(int ifindex, const char *ifname, int family, const uint8_t *ip,
		      uint8_t mac[6], int timeout_ms);

#endif /* PFS_NETDEV_H */
