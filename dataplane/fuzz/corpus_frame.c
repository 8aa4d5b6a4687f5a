// SPDX-License-Identifier: Apache-2.0
/* Writes a seed corpus for fuzz_frame: valid IPv4/IPv6 frames, with and
 * without a VLAN tag, several payload sizes, each behind a selector byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "pfs/frame.h"

int main(int argc, char **argv)
{
	static uint8_t buf[1 + 2048], pay[1500];
	int idx = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	for (int fam = 0; fam < 2; fam++)
		for (int vlan = 0; vlan < 2; vlan++)
			for (size_t plen = 0; plen <= 1024; plen = plen ? plen * 4 : 1) {
				struct pfs_frame_addr a = { .family = fam ? AF_INET6 : AF_INET,
							    .vlan = vlan ? 10 : 0,
							    .src_port = 1,
							    .dst_port = 7600 };
				struct pfs_frame_tmpl t;
				char path[512];
				FILE *f;
				int len;

				inet_pton(a.family, fam ? "fd00::1" : "10.0.0.1", a.src_ip);
				inet_pton(a.family, fam ? "fd00::2" : "10.0.0.2", a.dst_ip);
				pfs_frame_tmpl_init(&t, &a, 0);
				len = pfs_frame_build(&t, buf + 1, sizeof(buf) - 1, pay, plen);
				buf[0] = (uint8_t)(idx & 3);
				snprintf(path, sizeof(path), "%s/seed-%03d", argv[1], idx++);
				f = fopen(path, "wb");
				if (!f || fwrite(buf, 1, (size_t)len + 1, f) != (size_t)len + 1) {
					perror(path);
					return 1;
				}
				fclose(f);
			}
	return 0;
}
