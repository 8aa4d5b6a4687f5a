// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the pure parts of the AF_XDP link layer: frame build/parse
 * (round trips for IPv4/IPv6/VLAN, checksums against an independent
 * byte-at-a-time reference, every malformed case the parser must refuse,
 * random mutations), the reply address of a received datagram, MAC parsing,
 * interface resolution from the device plugins' environment over a fake
 * sysfs root, and capability names. No privileges needed.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "pfs/caps.h"
#include "pfs/frame.h"
#include "pfs/netdev.h"
#include "pfs/xsk.h"
#include "tap.h"

static uint8_t frame[4096];
static uint8_t payload[2048];

/* RFC 1071 the slow way, big-endian 16-bit words: the reference. */
static uint16_t ref_csum(const uint8_t *p, size_t len, uint32_t sum)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void addr4(struct pfs_frame_addr *a)
{
	memset(a, 0, sizeof(*a));
	memcpy(a->src_mac, "\x02\x00\x00\x00\x00\x01", 6);
	memcpy(a->dst_mac, "\x02\x00\x00\x00\x00\x02", 6);
	a->family = AF_INET;
	inet_pton(AF_INET, "10.1.2.3", a->src_ip);
	inet_pton(AF_INET, "10.1.2.4", a->dst_ip);
	a->src_port = 40000;
	a->dst_port = 7600;
}

static void addr6(struct pfs_frame_addr *a)
{
	addr4(a);
	a->family = AF_INET6;
	inet_pton(AF_INET6, "fd00::1", a->src_ip);
	inet_pton(AF_INET6, "fd00:1:2:3:4:5:6:7", a->dst_ip);
}

static int build(const struct pfs_frame_addr *a, uint32_t flags, size_t plen)
{
	struct pfs_frame_tmpl t;

	for (size_t i = 0; i < plen; i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	if (pfs_frame_tmpl_init(&t, a, flags))
		return -1;
	return pfs_frame_build(&t, frame, sizeof(frame), payload, plen);
}

/* Independent check of the checksums of a frame built from @a. */
static int ref_check(const struct pfs_frame_addr *a, int len, size_t l3)
{
	uint32_t ps = 0;
	size_t l4, ulen;
	uint16_t stored;

	if (a->family == AF_INET) {
		CHECK(ref_csum(frame + l3, 20, 0) == 0, "IPv4 header checksum wrong");
		l4 = l3 + 20;
		for (int i = 0; i < 8; i += 2)
			ps += (uint32_t)(frame[l3 + 12 + i] << 8 | frame[l3 + 13 + i]);
	} else {
		l4 = l3 + 40;
		for (int i = 0; i < 32; i += 2)
			ps += (uint32_t)(frame[l3 + 8 + i] << 8 | frame[l3 + 9 + i]);
	}
	ulen = (size_t)len - l4;
	CHECK((frame[l4 + 4] << 8 | frame[l4 + 5]) == (int)ulen, "UDP length");
	stored = (uint16_t)(frame[l4 + 6] << 8 | frame[l4 + 7]);
	if (stored)
		CHECK(ref_csum(frame + l4, ulen, ps + IPPROTO_UDP + (uint32_t)ulen) == 0,
		      "UDP checksum wrong (stored %04x)", stored);
	return TAP_PASS;
}

static int t_roundtrip(void)
{
	static const size_t sizes[] = { 0, 1, 15, 16, 17, 63, 64, 65, 1471, 1472, 1473, 2000 };
	struct pfs_frame_addr a;
	struct pfs_frame_info fi;

	for (int fam = 0; fam < 2; fam++) {
		for (int vlan = 0; vlan < 2; vlan++) {
			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
				size_t l3 = vlan ? 18 : 14;
				int len, rc;

				fam ? addr6(&a) : addr4(&a);
				a.vlan = vlan ? 100 : 0;
				len = build(&a, 0, sizes[s]);
				CHECK(len == (int)(l3 + (fam ? 48 : 28) + sizes[s]), "len %d", len);
				if (ref_check(&a, len, l3) != TAP_PASS)
					return TAP_FAIL;
				rc = pfs_frame_parse(frame, (size_t)len, 7600,
						     PFS_FRAME_VERIFY_CSUM, &fi);
				CHECK(rc == 0, "parse fam %d vlan %d size %zu: %d", fam, vlan,
				      sizes[s], rc);
				CHECK(fi.payload_len == sizes[s] &&
					      fi.payload_off == len - (int)sizes[s],
				      "payload %u@%u", fi.payload_len, fi.payload_off);
				CHECK(!memcmp(frame + fi.payload_off, payload, sizes[s]),
				      "payload bytes");
				CHECK(fi.family == a.family && fi.vlan == a.vlan, "family/vlan");
				CHECK(fi.src_port == 40000 && fi.dst_port == 7600, "ports");
				CHECK(!memcmp(fi.src_ip, a.src_ip, fam ? 16 : 4), "src ip");
				CHECK(!memcmp(fi.dst_ip, a.dst_ip, fam ? 16 : 4), "dst ip");
				CHECK(!memcmp(fi.src_mac, a.src_mac, 6) &&
					      !memcmp(fi.dst_mac, a.dst_mac, 6),
				      "macs");
			}
		}
	}
	return TAP_PASS;
}

static int t_no_csum4(void)
{
	struct pfs_frame_addr a;
	struct pfs_frame_info fi;
	int len;

	addr4(&a);
	len = build(&a, PFS_FRAME_NO_UDP_CSUM4, 100);
	CHECK(frame[14 + 20 + 6] == 0 && frame[14 + 20 + 7] == 0, "UDP checksum not 0");
	CHECK(pfs_frame_parse(frame, (size_t)len, 0, PFS_FRAME_VERIFY_CSUM, &fi) == 0, "parse");
	/* IPv6 ignores the flag: its checksum is mandatory */
	addr6(&a);
	len = build(&a, PFS_FRAME_NO_UDP_CSUM4, 100);
	CHECK(frame[14 + 40 + 6] || frame[14 + 40 + 7], "IPv6 UDP checksum 0");
	CHECK(ref_check(&a, len, 14) == TAP_PASS, "IPv6 checksum");
	return TAP_PASS;
}

static int t_ipv4_options(void)
{
	struct pfs_frame_addr a;
	struct pfs_frame_info fi;
	uint8_t f2[256];
	int len;
	uint16_t c;

	addr4(&a);
	len = build(&a, PFS_FRAME_NO_UDP_CSUM4, 32);
	/* insert 4 bytes of options (NOPs... EOL) after the 20-byte header */
	memcpy(f2, frame, 34);
	memcpy(f2 + 34, "\x01\x01\x01\x00", 4);
	memcpy(f2 + 38, frame + 34, (size_t)len - 34);
	f2[14] = 0x46;
	f2[16] = 0;
	f2[17] = (uint8_t)(len - 14 + 4);
	f2[24] = f2[25] = 0;
	c = ref_csum(f2 + 14, 24, 0);
	f2[24] = (uint8_t)(c >> 8);
	f2[25] = (uint8_t)c;
	CHECK(pfs_frame_parse(f2, (size_t)len + 4, 7600, PFS_FRAME_VERIFY_CSUM, &fi) == 0, "parse");
	CHECK(fi.payload_off == 14 + 24 + 8 && fi.payload_len == 32, "payload %u@%u",
	      fi.payload_len, fi.payload_off);
	CHECK(!memcmp(f2 + fi.payload_off, payload, 32), "payload bytes");
	return TAP_PASS;
}

static int t_padding(void)
{
	struct pfs_frame_addr a;
	struct pfs_frame_info fi;
	int len;

	addr4(&a);
	len = build(&a, 0, 4); /* 46 bytes: a NIC pads to 60 */
	memset(frame + len, 0xee, 14);
	CHECK(pfs_frame_parse(frame, (size_t)len + 14, 0, PFS_FRAME_VERIFY_CSUM, &fi) == 0,
	      "parse");
	CHECK(fi.payload_len == 4, "padding counted as payload: %u", fi.payload_len);
	return TAP_PASS;
}

static int t_truncated(void)
{
	struct pfs_frame_addr a;
	struct pfs_frame_info fi;

	for (int fam = 0; fam < 2; fam++) {
		int len;

		fam ? addr6(&a) : addr4(&a);
		a.vlan = 7;
		len = build(&a, 0, 40);
		for (int l = 0; l < len; l++)
			CHECK(pfs_frame_parse(frame, (size_t)l, 0, 0, &fi) == -EINVAL,
			      "fam %d: %d of %d bytes not refused", fam, l, len);
	}
	return TAP_PASS;
}

struct mutation {
	const char *name;
	int fam;
	size_t off; /* from the start of the untagged frame */
	uint8_t val;
	int want;
};

static int t_malformed(void)
{
	static const struct mutation m[] = {
		{ "ARP ethertype", 0, 12, 0x08, -EPROTONOSUPPORT }, /* 0x0800 -> 0x0806 below */
		{ "IPv4 version 5", 0, 14, 0x55, -EINVAL },
		{ "IPv4 IHL 4", 0, 14, 0x44, -EINVAL },
		{ "IPv4 IHL 15 (header checksum breaks)", 0, 14, 0x4f, -EBADMSG },
		{ "IPv4 total length huge", 0, 16, 0xff, -EINVAL },
		{ "IPv4 total length < IHL", 0, 17, 10, -EINVAL },
		{ "IPv4 MF fragment", 0, 20, 0x20, -EPROTONOSUPPORT },
		{ "IPv4 fragment offset", 0, 21, 0x08, -EPROTONOSUPPORT },
		{ "IPv4 TCP", 0, 23, IPPROTO_TCP, -EPROTONOSUPPORT },
		{ "IPv4 header checksum", 0, 24, 0x00, -EBADMSG },
		{ "UDP length < 8", 0, 38, 0x00, -EINVAL },
		{ "UDP length > IP", 0, 38, 0xff, -EINVAL },
		{ "UDP checksum", 0, 40, 0x12, -EBADMSG },
		{ "payload bit flip", 0, 50, 0xaa, -EBADMSG },
		{ "UDP to port 7601", 0, 37, 0xb1, -ENOENT },
		{ "IPv6 version 4", 1, 14, 0x40, -EINVAL },
		{ "IPv6 payload length huge", 1, 18, 0xff, -EINVAL },
		{ "IPv6 hop-by-hop ext header", 1, 20, 0, -EPROTONOSUPPORT },
		{ "IPv6 ICMPv6 (ND)", 1, 20, 58, -EPROTONOSUPPORT },
		{ "IPv6 UDP checksum", 1, 60, 0x12, -EBADMSG },
	};
	struct pfs_frame_addr a;
	struct pfs_frame_info fi;

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		int len, rc;

		m[i].fam ? addr6(&a) : addr4(&a);
		len = build(&a, 0, 40);
		if (!strcmp(m[i].name, "ARP ethertype"))
			frame[13] = 0x06;
		else
			frame[m[i].off] =
				m[i].val == frame[m[i].off] ? (uint8_t)~m[i].val : m[i].val;
		rc = pfs_frame_parse(frame, (size_t)len, 7600, PFS_FRAME_VERIFY_CSUM, &fi);
		CHECK(rc == m[i].want, "%s: got %d want %d", m[i].name, rc, m[i].want);
	}
	/* an IPv6 UDP checksum of 0 is invalid (RFC 8200 8.1) */
	addr6(&a);
	{
		int len = build(&a, 0, 40);

		frame[60] = frame[61] = 0;
		CHECK(pfs_frame_parse(frame, (size_t)len, 0, PFS_FRAME_VERIFY_CSUM, &fi) ==
			      -EBADMSG,
		      "IPv6 zero UDP checksum accepted");
	}
	/* two VLAN tags */
	addr4(&a);
	a.vlan = 5;
	{
		int len = build(&a, 0, 40);

		frame[16] = 0x81;
		frame[17] = 0x00;
		CHECK(pfs_frame_parse(frame, (size_t)len, 0, 0, &fi) == -EPROTONOSUPPORT, "QinQ");
	}
	return TAP_PASS;
}

static int t_fuzz_invariants(void)
{
	struct pfs_frame_addr a;
	struct pfs_frame_info fi;
	unsigned int seed = 12345;
	uint8_t *f = malloc(256);

	for (int it = 0; it < 200000; it++) {
		int len, flips, rc;
		size_t l;

		(it & 1) ? addr6(&a) : addr4(&a);
		a.vlan = (it & 2) ? 9 : 0;
		len = build(&a, 0, (size_t)(rand_r(&seed) % 120));
		flips = 1 + rand_r(&seed) % 4;
		for (int k = 0; k < flips; k++)
			frame[rand_r(&seed) % (unsigned int)len] ^=
				(uint8_t)(1 + rand_r(&seed) % 255);
		l = (size_t)(rand_r(&seed) % 3 ? len : rand_r(&seed) % (len + 1));
		memcpy(f, frame, l); /* exact-size buffer */
		rc = pfs_frame_parse(f, l, 0, (it & 4) ? PFS_FRAME_VERIFY_CSUM : 0, &fi);
		if (!rc)
			CHECK((size_t)fi.payload_off + fi.payload_len <= l, "payload beyond frame");
	}
	free(f);
	return TAP_PASS;
}

static int t_build_limits(void)
{
	struct pfs_frame_addr a;
	struct pfs_frame_tmpl t;

	addr4(&a);
	CHECK(!pfs_frame_tmpl_init(&t, &a, 0), "init");
	CHECK(pfs_frame_build(&t, frame, 100, payload, 100) == -EMSGSIZE, "cap not checked");
	CHECK(pfs_frame_build(&t, frame, 142, payload, 100) == 142, "exact fit");
	a.family = AF_UNIX;
	CHECK(pfs_frame_tmpl_init(&t, &a, 0) == -EINVAL, "family");
	addr4(&a);
	a.vlan = 4095;
	CHECK(pfs_frame_tmpl_init(&t, &a, 0) == -EINVAL, "vlan 4095");
	return TAP_PASS;
}

static int t_reply_addr(void)
{
	struct pfs_frame_addr a, r;
	struct pfs_frame_info fi;
	struct pfs_dgram d;
	int len;

	addr6(&a);
	a.vlan = 42;
	len = build(&a, 0, 33);
	CHECK(!pfs_frame_parse(frame, (size_t)len, 0, 0, &fi), "parse");
	d = (struct pfs_dgram){ .data = frame + fi.payload_off,
				.len = fi.payload_len,
				.payload_off = fi.payload_off };
	CHECK(!pfs_xsk__reply_addr(&d, &r), "reply addr");
	CHECK(!memcmp(r.dst_mac, a.src_mac, 6) && !memcmp(r.src_mac, a.dst_mac, 6), "macs");
	CHECK(!memcmp(r.dst_ip, a.src_ip, 16) && !memcmp(r.src_ip, a.dst_ip, 16), "ips");
	CHECK(r.dst_port == a.src_port && r.src_port == a.dst_port && r.vlan == 42 &&
		      r.family == AF_INET6,
	      "ports/vlan/family");
	return TAP_PASS;
}

static int t_mac_parse(void)
{
	uint8_t m[6];

	CHECK(!pfs_mac_parse("02:aB:00:ff:10:9", m) && m[1] == 0xab && m[5] == 9, "valid");
	CHECK(pfs_mac_parse("02:ab:00:ff:10", m) == -EINVAL, "short");
	CHECK(pfs_mac_parse("02:ab:00:ff:10:99:", m) == -EINVAL, "trailing");
	CHECK(pfs_mac_parse("zz:ab:00:ff:10:99", m) == -EINVAL, "hex");
	return TAP_PASS;
}

static char sysroot[64];

static void mk(const char *rel)
{
	char p[256], cmd[320];

	snprintf(p, sizeof(p), "%s/%s", sysroot, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", p);
	if (system(cmd))
		tap_diag("mkdir %s failed", p);
}

/* Device Information files under a fake devinfo root: by name, dp/ before
 * cni/, a VF without a netdev skipped, a hostile address refused. */
/* @dir/@name with @text. */
static void sh_write(const char *dir, const char *name, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	if (!f || fputs(text, f) < 0)
		tap_diag("writing %s failed", p);
	if (f)
		fclose(f);
}

static int t_devinfo(void)
{
	char dir[160], env_dir[200], out[16], why[600];
	char *env[] = { env_dir, NULL };
	int rc;

	snprintf(dir, sizeof(dir), "%s/devinfo", sysroot);
	snprintf(env_dir, sizeof(env_dir), "PFS_DEVINFO_DIR=%s", dir);
	mk("devinfo/dp");
	mk("devinfo/cni");
	rc = pfs_netdev_resolve(NULL, env, sysroot, out, sizeof(out), why, sizeof(why));
	CHECK(rc == -ENOENT && strstr(why, dir), "empty devinfo: %d %s", rc, why);
	sh_write(
		dir, "cni/net1-0000:3b:02.1.json",
		"{\"type\":\"pci\",\"version\":\"1.1.0\",\"pci\":{\"pci-address\":\"0000:3b:02.1\"}}");
	sh_write(
		dir, "dp/intel.com-sriov-0000:3b:02.3-device.json",
		"{\"type\": \"pci\", \"version\": \"1.1.0\", \"pci\": {\"pci-address\": \"0000:3b:02.3\"}}");
	sh_write(dir, "dp/a-evil.json", "{\"pci\":{\"pci-address\":\"../../../etc\"}}");
	rc = pfs_netdev_resolve(NULL, env, sysroot, out, sizeof(out), why, sizeof(why));
	CHECK(!rc && !strcmp(out, "ens1f0v1") && strstr(why, "cni/net1-0000:3b:02.1.json"),
	      "the dp/ VF has no netdev (vfio): the cni/ file's: %d %s (%s)", rc, out, why);
	sh_write(dir, "dp/b-0000:3b:02.2-device.json",
		 "{\"type\":\"pci\",\"pci\":{\"pci-address\":\"0000:3b:02.2\"}}");
	rc = pfs_netdev_resolve(NULL, env, sysroot, out, sizeof(out), why, sizeof(why));
	CHECK(!rc && !strcmp(out, "ens1f0v2") && strstr(why, "dp/b-"), "dp/ first: %d %s (%s)", rc,
	      out, why);
	return 0;
}

static int t_resolve(void)
{
	char out[16], why[400];
	int rc;

	snprintf(sysroot, sizeof(sysroot), "/tmp/pfs-fakesys-%d", getpid());
	mk("bus/pci/devices/0000:3b:02.1/net/ens1f0v1");
	mk("bus/pci/devices/0000:3b:02.2/net/ens1f0v2");
	mk("bus/pci/devices/0000:3b:02.3"); /* a VF bound to vfio-pci: no net/ */
	{
		char *env0[] = { "PATH=/bin", NULL };
		char *env1[] = { "AFXDP_DEVICES_POOLB=vethb", "AFXDP_DEVICES_POOLA= veth1 ,veth2",
				 "PCIDEVICE_INTEL_COM_SRIOV=0000:3b:02.1", NULL };
		char *env2[] = { "PCIDEVICE_INTEL_COM_SRIOV=0000:3b:02.3,0000:3b:02.2", NULL };
		char *env3[] = { "PCIDEVICE_INTEL_COM_SRIOV=0000:3b:02.3", NULL };
		char *env4[] = { "AFXDP_DEVICES_P=averyveryverylongname0", NULL };
		char *env5[] = { "PCIDEVICE_X=../../etc", NULL };
		char *env6[] = { "AFXDP_DEVICES_PFSDATA0=pfsdata0",
				 "PFS_DATA_LINK_PFSDATA1=pfsdata1", NULL };

		rc = pfs_netdev_resolve("eth9", env1, sysroot, out, sizeof(out), why, sizeof(why));
		CHECK(!rc && !strcmp(out, "eth9"), "flag wins: %d %s", rc, out);
		rc = pfs_netdev_resolve(NULL, env1, sysroot, out, sizeof(out), why, sizeof(why));
		CHECK(!rc && !strcmp(out, "veth1"), "afxdp first pool, first item: %d %s", rc, out);
		CHECK(strstr(why, "AFXDP_DEVICES_POOLA"), "why: %s", why);
		rc = pfs_netdev_resolve("", env2, sysroot, out, sizeof(out), why, sizeof(why));
		CHECK(!rc && !strcmp(out, "ens1f0v2"), "sriov skips a vfio VF: %d %s", rc, out);
		CHECK(strstr(why, "0000:3b:02.2"), "why: %s", why);
		rc = pfs_netdev_resolve(NULL, env3, sysroot, out, sizeof(out), why, sizeof(why));
		CHECK(rc == -ENODEV && strstr(why, "0000:3b:02.3") && strstr(why, "vfio"),
		      "vfio VF: %d %s", rc, why);
		rc = pfs_netdev_resolve(NULL, env0, sysroot, out, sizeof(out), why, sizeof(why));
		CHECK(rc == -ENOENT && strstr(why, "PFS_DATA_LINK_") &&
			      strstr(why, "AFXDP_DEVICES_") && strstr(why, "PCIDEVICE_"),
		      "nothing: %d %s", rc, why);
		rc = pfs_netdev_resolve(NULL, env4, sysroot, out, sizeof(out), why, sizeof(why));
		CHECK(rc == -ENAMETOOLONG, "long name: %d", rc);
		rc = pfs_netdev_resolve(NULL, env5, sysroot, out, sizeof(out), why, sizeof(why));
		CHECK(rc != 0, "path traversal accepted: %s", out);
		rc = pfs_netdev_resolve(NULL, env6, sysroot, out, sizeof(out), why, sizeof(why));
		CHECK(!rc && !strcmp(out, "pfsdata1") && strstr(why, "PFS_DATA_LINK_PFSDATA1"),
		      "our device plugin's variable first: %d %s (%s)", rc, out, why);
		CHECK(!t_devinfo(), "Device Information files");
	}
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sysroot);
		if (system(cmd))
			tap_diag("cleanup of %s failed", sysroot);
	}
	return TAP_PASS;
}

static int t_caps_names(void)
{
	char b[128];

	pfs_caps_names(PFS_CAP(CAP_BPF) | PFS_CAP(CAP_NET_ADMIN) | PFS_CAP(CAP_NET_RAW), b,
		       sizeof(b));
	CHECK(!strcmp(b, "CAP_NET_ADMIN,CAP_NET_RAW,CAP_BPF"), "%s", b);
	pfs_caps_names(PFS_CAP(CAP_IPC_LOCK) | PFS_CAP(2), b, sizeof(b));
	CHECK(!strcmp(b, "cap_2,CAP_IPC_LOCK"), "%s", b);
	CHECK(pfs_caps_missing(PFS_CAP(CAP_BPF) | PFS_CAP(CAP_NET_RAW), PFS_CAP(CAP_NET_RAW)) ==
		      PFS_CAP(CAP_BPF),
	      "missing");
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "frame round trip IPv4/IPv6, VLAN, 0..2000 B, checksums vs reference", t_roundtrip },
	{ "IPv4 UDP checksum 0 on request; IPv6 always checksummed", t_no_csum4 },
	{ "IPv4 with options (IHL 6) parses", t_ipv4_options },
	{ "Ethernet padding is not payload", t_padding },
	{ "every truncation refused (EINVAL)", t_truncated },
	{ "malformed/foreign frames refused with the right error", t_malformed },
	{ "200k random mutations: no payload beyond the frame", t_fuzz_invariants },
	{ "build limits and bad templates", t_build_limits },
	{ "reply address swaps MACs, IPs, ports", t_reply_addr },
	{ "MAC parsing", t_mac_parse },
	{ "interface from --ifname, AFXDP_DEVICES_*, PCIDEVICE_* (fake sysfs)", t_resolve },
	{ "capability names and missing set", t_caps_names },
};

TAP_MAIN(tests)
