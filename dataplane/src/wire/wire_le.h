/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: little-endian field access for the wire codecs (grams and
 * control records, the UDP fragment and repair records, the blob-share
 * protocol). Byte by byte, so alignment and host order never matter. */
#ifndef PFS_WIRE_LE_H
#define PFS_WIRE_LE_H

#include <errno.h>
#include <stdint.h>

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* Varints (the arithmetic grams, delta grams): zig-zag for signed values,
 * LEB128 for unsigned. */
static inline uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline uint8_t *put_uvarint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)v | 0x80;
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Canonical LEB128: at most 10 bytes, no bits past 64, no trailing zero byte. */
static inline int get_uvarint(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p = *pp;
	uint64_t r = 0;

	for (unsigned int shift = 0; shift < 70; shift += 7) {
		uint8_t c;

		if (p == end)
			return -EBADMSG;
		c = *p++;
		if (shift == 63 && c > 1)
			return -ERANGE;
		r |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			if (!c && shift)
				return -EBADMSG;
			*pp = p;
			*v = r;
			return 0;
		}
	}
	return -EBADMSG;
}

#endif /* PFS_WIRE_LE_H */
