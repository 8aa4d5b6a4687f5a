// SPDX-License-Identifier: Apache-2.0
/*
 * Blob tests: options, rounding, seed fill against an independent reference,
 * fingerprints, page kinds (4K, THP, 2M and 1G with hugepages reserved by the
 * test and released after), fallback with a reason, named blobs opened by a
 * second process (fork + open by name), hugetlbfs files.
 * Hugepages are reserved by raising vm.nr_hugepages by what the test needs
 * and lowering it by the same amount afterwards (other users of the machine
 * may be changing it too, so the test never writes back an absolute value).
 */
#include <errno.h>
#include <stdlib.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pfs/blob.h"
#include "pfs/integrity.h"
#include "tap.h"

#define MiB (1ULL << 20)

static struct pfs_blob_opts opts(uint64_t size, enum pfs_page_kind k, uint64_t seed)
{
	struct pfs_blob_opts o = { .sz = sizeof(o),
				   .size = size,
				   .page = k,
				   .fill = PFS_FILL_SEED,
				   .seed = seed,
				   .numa_node = -1 };
	return o;
}

/* Reference of the documented fill formula, written independently. */
static uint32_t ref_word(uint64_t i, uint64_t seed)
{
	uint32_t h = ((uint32_t)seed + (uint32_t)i * 0x9e3779b9u) ^
		     ((uint32_t)(seed >> 32) ^ (uint32_t)(i >> 32) * 0x27d4eb2fu);

	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	return h ^ (h >> 16);
}

static uint8_t ref_byte(uint64_t off, uint64_t seed)
{
	return (uint8_t)(ref_word(off / 4, seed) >> (8 * (off % 4)));
}

static const char *hp_sys(uint64_t pg, const char *f, char *buf, size_t n)
{
	snprintf(buf, n, "/sys/kernel/mm/hugepages/hugepages-%llukB/%s",
		 (unsigned long long)(pg / 1024), f);
	return buf;
}

static long hp_read(uint64_t pg, const char *f)
{
	char p[128];
	long v = -1;
	FILE *fp = fopen(hp_sys(pg, f, p, sizeof(p)), "r");

	if (fp) {
		if (fscanf(fp, "%ld", &v) != 1)
			v = -1;
		fclose(fp);
	}
	return v;
}

static int hp_write_nr(uint64_t pg, long v)
{
	char p[128];
	FILE *fp = fopen(hp_sys(pg, "nr_hugepages", p, sizeof(p)), "w");
	int ok;

	if (!fp)
		return -errno;
	ok = fprintf(fp, "%ld\n", v) > 0;
	return fclose(fp) == 0 && ok ? 0 : -EIO;
}

/* Make @need pages of size @pg free; returns how many were added (>= 0) or
 * -1 when the kernel could not provide them (reason in tap_skip_reason). */
static long hp_reserve(uint64_t pg, long need)
{
	long fr = hp_read(pg, "free_hugepages"), nr = hp_read(pg, "nr_hugepages"), add;

	if (fr < 0 || nr < 0) {
		tap_skip("no %llu kB hugepage support in this kernel",
			 (unsigned long long)(pg / 1024));
		return -1;
	}
	if (fr >= need)
		return 0;
	/* A margin: other processes may take free pages between now and use. */
	add = need - fr + (pg == 2 * MiB ? 4 : 0);
	if (hp_write_nr(pg, nr + add)) {
		tap_skip("cannot write nr_hugepages (%s): need root", strerror(errno));
		return -1;
	}
	if (hp_read(pg, "free_hugepages") < need) {
		long got = hp_read(pg, "nr_hugepages") - nr;

		hp_write_nr(pg, hp_read(pg, "nr_hugepages") - got);
		tap_skip("kernel gave %ld of %ld %llu kB hugepages (memory fragmented)", got, add,
			 (unsigned long long)(pg / 1024));
		return -1;
	}
	return add;
}

static void hp_release(uint64_t pg, long added)
{
	if (added > 0)
		hp_write_nr(pg, hp_read(pg, "nr_hugepages") - added);
}

static int t_invalid_opts(void)
{
	struct pfs_blob_opts o = opts(0, PFS_PAGE_4K, 1);

	errno = 0;
	CHECK(!pfs_blob__create(&o) && errno == EINVAL, "size 0: errno %d", errno);
	o = opts(MiB, PFS_PAGE_4K, 1);
	o.name = "a/b";
	CHECK(!pfs_blob__create(&o) && errno == EINVAL, "name with slash");
	o = opts(MiB, PFS_PAGE_4K, 1);
	o.sz = 8;
	CHECK(!pfs_blob__create(&o) && errno == EINVAL, "short opts");
	CHECK(!pfs_blob__create(NULL) && errno == EINVAL, "NULL opts");
	return TAP_PASS;
}

static int t_4k_fill_reference(void)
{
	struct pfs_blob_opts o = opts(3 * MiB + 5, PFS_PAGE_4K, 0xfeedface12345678ULL);
	struct pfs_blob *b = pfs_blob__create(&o);
	uint8_t *d;

	CHECK(b, "create: %s", strerror(errno));
	d = pfs_blob__data(b);
	CHECK(pfs_blob__size(b) == 4 * MiB, "rounded to 2 MiB: %llu",
	      (unsigned long long)pfs_blob__size(b));
	CHECK(pfs_blob__page_kind(b) == PFS_PAGE_4K, "kind %s",
	      pfs_page_kind_str(pfs_blob__page_kind(b)));
	CHECK(!pfs_blob__fallback_reason(b), "unexpected reason");
	CHECK(pfs_blob__fd(b) >= 0, "memfd expected");
	for (uint64_t off = 0; off < 4 * MiB; off += 4093)
		CHECK(d[off] == ref_byte(off, o.seed), "byte %llu", (unsigned long long)off);
	CHECK(d[4 * MiB - 1] == ref_byte(4 * MiB - 1, o.seed), "last byte");
	pfs_blob__close(b);
	return TAP_PASS;
}

static int t_fill_split_and_high_index(void)
{
	uint8_t whole[4096], part[4096];
	uint64_t seed = 42, base = (1ULL << 34) - 1000; /* crosses word 2^32 */

	pfs_blob_fill_seed(whole, base, sizeof(whole), seed);
	for (size_t i = 0; i < sizeof(whole); i++)
		CHECK(whole[i] == ref_byte(base + i, seed), "byte %zu", i);
	for (size_t a = 0; a < sizeof(part);) {
		size_t n = 1 + (a * 7919) % 37;

		if (a + n > sizeof(part))
			n = sizeof(part) - a;
		pfs_blob_fill_seed(part + a, base + a, n, seed);
		a += n;
	}
	CHECK(!memcmp(whole, part, sizeof(whole)), "split fill differs");
	return TAP_PASS;
}

static int t_fingerprint(void)
{
	struct pfs_blob_opts o = opts(300 * MiB, PFS_PAGE_4K, 7);
	struct pfs_blob *a = pfs_blob__create(&o), *b, *c;
	uint64_t fa, fb, fc;

	CHECK(a, "create a");
	b = pfs_blob__create(&o);
	CHECK(b, "create b");
	o.seed = 8;
	c = pfs_blob__create(&o);
	CHECK(c, "create c");
	fa = pfs_blob__fingerprint(a);
	fb = pfs_blob__fingerprint(b);
	fc = pfs_blob__fingerprint(c);
	CHECK(fa == fb, "same seed: %llx vs %llx", (unsigned long long)fa, (unsigned long long)fb);
	CHECK(fa != fc, "different seed, same fingerprint");
	CHECK((uint32_t)fa == pfs_crc32c(0, pfs_blob__data(a), pfs_blob__size(a)),
	      "low half is the whole-blob CRC32C");
	pfs_blob__data(b)[123456789] ^= 1;
	CHECK(pfs_blob__fingerprint(b) != fa, "one flipped bit not detected");
	pfs_blob__close(a);
	pfs_blob__close(b);
	pfs_blob__close(c);
	return TAP_PASS;
}

static int t_thp(void)
{
	struct pfs_blob_opts o = opts(64 * MiB, PFS_PAGE_THP, 3);
	struct pfs_blob *b = pfs_blob__create(&o);
	enum pfs_page_kind k;

	CHECK(b, "create: %s", strerror(errno));
	k = pfs_blob__page_kind(b);
	tap_diag("THP request: got %s, %llu huge bytes, reason: %s", pfs_page_kind_str(k),
		 (unsigned long long)pfs_blob__huge_bytes(b),
		 pfs_blob__fallback_reason(b) ? pfs_blob__fallback_reason(b) : "none");
	if (k == PFS_PAGE_THP)
		CHECK(pfs_blob__huge_bytes(b) > 0, "THP reported without huge pages");
	else
		CHECK(k == PFS_PAGE_4K && pfs_blob__fallback_reason(b), "silent fallback");
	pfs_blob__close(b);
	if (k != PFS_PAGE_THP)
		return tap_skip("THP not granted by this kernel (fallback reported correctly)");
	return TAP_PASS;
}

static int t_2m_reserved(void)
{
	struct pfs_blob_opts o = opts(32 * MiB, PFS_PAGE_2M, 9);
	struct pfs_blob *b, *ref;
	long added = hp_reserve(2 * MiB, 16);
	int ret = TAP_FAIL;

	if (added < 0)
		return TAP_SKIP;
	o.no_fallback = true;
	b = pfs_blob__create(&o);
	if (!b) {
		tap_diag("create 2M: %s", strerror(errno));
		goto out;
	}
	o.page = PFS_PAGE_4K;
	ref = pfs_blob__create(&o);
	if (pfs_blob__page_kind(b) == PFS_PAGE_2M && !pfs_blob__fallback_reason(b) &&
	    pfs_blob__huge_bytes(b) == 32 * MiB && ref &&
	    pfs_blob__fingerprint(b) == pfs_blob__fingerprint(ref))
		ret = TAP_PASS;
	else
		tap_diag("kind %s huge %llu", pfs_page_kind_str(pfs_blob__page_kind(b)),
			 (unsigned long long)pfs_blob__huge_bytes(b));
	pfs_blob__close(ref);
	pfs_blob__close(b);
out:
	hp_release(2 * MiB, added);
	return ret;
}

static int t_2m_missing_falls_back(void)
{
	long fr = hp_read(2 * MiB, "free_hugepages");
	struct pfs_blob_opts o;
	struct pfs_blob *b;
	const char *r;

	if (fr < 0)
		return tap_skip("no 2 MiB hugepage support");
	/* Ask for more than the pool holds; mapping fails before any prefault. */
	o = opts((uint64_t)(fr + 1) * 2 * MiB, PFS_PAGE_2M, 1);
	o.no_prefault = true;
	o.fill = PFS_FILL_NONE;
	b = pfs_blob__create(&o);
	CHECK(b, "fallback create failed: %s", strerror(errno));
	r = pfs_blob__fallback_reason(b);
	CHECK(pfs_blob__page_kind(b) != PFS_PAGE_2M, "got 2M from an empty pool?");
	CHECK(r && strstr(r, "hugetlb 2M") && strstr(r, "free"), "reason: %s", r ? r : "NULL");
	tap_diag("fallback to %s: %s", pfs_page_kind_str(pfs_blob__page_kind(b)), r);
	pfs_blob__close(b);
	o.no_fallback = true;
	errno = 0;
	CHECK(!pfs_blob__create(&o) && errno == ENOMEM, "no_fallback: errno %d", errno);
	return TAP_PASS;
}

static int t_1g(void)
{
	struct pfs_blob_opts o = opts(1ULL << 30, PFS_PAGE_1G, 5);
	struct pfs_blob *b;
	long added;
	int ret = TAP_FAIL;

	/* A size that is not a multiple of 1 GiB never uses 1 GiB pages. */
	o.size = 4 * MiB;
	o.no_prefault = true;
	b = pfs_blob__create(&o);
	CHECK(b && pfs_blob__page_kind(b) != PFS_PAGE_1G &&
		      strstr(pfs_blob__fallback_reason(b), "multiple of 1 GiB"),
	      "odd size");
	pfs_blob__close(b);

	/* More 1 GiB pages than are free: the mapping falls back and says why.
	 * This runs whether or not the kernel can build a page below. */
	if (hp_read(1ULL << 30, "free_hugepages") >= 0) {
		const char *r;

		o = opts((uint64_t)(hp_read(1ULL << 30, "free_hugepages") + 1) << 30, PFS_PAGE_1G,
			 5);
		o.no_prefault = true;
		o.fill = PFS_FILL_NONE;
		b = pfs_blob__create(&o);
		r = b ? pfs_blob__fallback_reason(b) : NULL;
		CHECK(b && pfs_blob__page_kind(b) != PFS_PAGE_1G && r && strstr(r, "hugetlb 1G"),
		      "a 1G pool too small: %s", r ? r : strerror(errno));
		pfs_blob__close(b);
	}

	added = hp_reserve(1ULL << 30, 1);
	if (added < 0)
		return TAP_SKIP;
	o = opts(1ULL << 30, PFS_PAGE_1G, 5);
	o.no_fallback = true;
	o.fill = PFS_FILL_NONE;
	b = pfs_blob__create(&o);
	if (b && pfs_blob__page_kind(b) == PFS_PAGE_1G && !pfs_blob__fallback_reason(b))
		ret = TAP_PASS;
	else
		tap_diag("1G create: %s",
			 b ? pfs_page_kind_str(pfs_blob__page_kind(b)) : strerror(errno));
	pfs_blob__close(b);
	hp_release(1ULL << 30, added);
	return ret;
}

/* Child process: open by name, compare fingerprint, write a marker. */
static int child_open_check(const char *dir, const char *name, uint64_t fp, enum pfs_page_kind want)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct pfs_blob *b = pfs_blob__open(dir, name);

		if (!b)
			_exit(10);
		if (pfs_blob__fingerprint(b) != fp)
			_exit(11);
		if (pfs_blob__page_kind(b) != want)
			_exit(12);
		pfs_blob__data(b)[17] = 0xa5;
		pfs_blob__close(b);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static int t_named_second_process(void)
{
	char name[64];
	struct pfs_blob_opts o = opts(8 * MiB, PFS_PAGE_4K, 11);
	struct pfs_blob *b, *again;
	int rc;

	snprintf(name, sizeof(name), "pfs-test-blob-%d", getpid());
	o.name = name;
	b = pfs_blob__create(&o);
	CHECK(b, "create named: %s", strerror(errno));
	CHECK(pfs_blob__path(b) && !strncmp(pfs_blob__path(b), "/dev/shm/", 9), "path %s",
	      pfs_blob__path(b));
	{
		struct stat fst;
		mode_t um = umask(0);

		umask(um);
		/* Any user may read it (a fill's consumer volume); only the holder writes. */
		CHECK(!stat(pfs_blob__path(b), &fst) && (fst.st_mode & 0777) == (0644 & ~um),
		      "mode %o, want 0644 less the umask %o", fst.st_mode & 0777, um);
	}
	again = pfs_blob__create(&o);
	CHECK(!again && errno == EEXIST, "second create must be EEXIST, errno %d", errno);
	rc = child_open_check(NULL, name, pfs_blob__fingerprint(b), PFS_PAGE_4K);
	CHECK(rc == 0, "child exit %d", rc);
	CHECK(pfs_blob__data(b)[17] == 0xa5, "child's write not visible: same pages?");
	pfs_blob__close(b);
	CHECK(pfs_blob_remove(NULL, name) == 0, "remove");
	CHECK(!pfs_blob__open(NULL, name) && errno == ENOENT, "removed blob opens");
	return TAP_PASS;
}

static int t_named_2m_without_hugetlbfs(void)
{
	char name[64];
	struct pfs_blob_opts o = opts(4 * MiB, PFS_PAGE_2M, 12);
	struct pfs_blob *b;
	const char *r;

	if (!access("/dev/hugepages", F_OK))
		return tap_skip("/dev/hugepages exists here; case needs it absent");
	snprintf(name, sizeof(name), "pfs-test-nohtlb-%d", getpid());
	o.name = name;
	b = pfs_blob__create(&o);
	CHECK(b, "create: %s", strerror(errno));
	r = pfs_blob__fallback_reason(b);
	CHECK(r && strstr(r, "/dev/hugepages"), "reason %s", r ? r : "NULL");
	CHECK(!strncmp(pfs_blob__path(b), "/dev/shm/", 9), "fell back to %s", pfs_blob__path(b));
	pfs_blob__close(b);
	pfs_blob_remove(NULL, name);
	return TAP_PASS;
}

static int t_named_hugetlbfs(void)
{
	char dir[] = "/tmp/pfs-htlb-XXXXXX", name[] = "blob0";
	struct pfs_blob_opts o = opts(16 * MiB, PFS_PAGE_2M, 13);
	struct pfs_blob *b;
	long added;
	int ret = TAP_FAIL, rc;

	if (!mkdtemp(dir))
		return tap_skip("mkdtemp: %s", strerror(errno));
	if (mount("nodev", dir, "hugetlbfs", 0, "pagesize=2M")) {
		rmdir(dir);
		return tap_skip("cannot mount hugetlbfs: %s (needs CAP_SYS_ADMIN)",
				strerror(errno));
	}
	added = hp_reserve(2 * MiB, 8);
	if (added < 0) {
		ret = TAP_SKIP;
		goto out_umount;
	}
	o.name = name;
	o.dir = dir;
	o.no_fallback = true;
	b = pfs_blob__create(&o);
	if (!b) {
		tap_diag("create on hugetlbfs: %s", strerror(errno));
		goto out_release;
	}
	rc = child_open_check(dir, name, pfs_blob__fingerprint(b), PFS_PAGE_2M);
	if (rc == 0 && pfs_blob__page_kind(b) == PFS_PAGE_2M && pfs_blob__data(b)[17] == 0xa5)
		ret = TAP_PASS;
	else
		tap_diag("child rc %d kind %s", rc, pfs_page_kind_str(pfs_blob__page_kind(b)));
	pfs_blob__close(b);
	pfs_blob_remove(dir, name);
out_release:
	hp_release(2 * MiB, added);
out_umount:
	umount(dir);
	rmdir(dir);
	return ret;
}

static int t_from_fd(void)
{
	struct pfs_blob_opts o = opts(2 * MiB, PFS_PAGE_4K, 14);
	struct pfs_blob *a = pfs_blob__create(&o), *b;

	CHECK(a, "create");
	b = pfs_blob__from_fd(pfs_blob__fd(a));
	CHECK(b, "from_fd: %s", strerror(errno));
	CHECK(pfs_blob__size(b) == pfs_blob__size(a), "size");
	CHECK(pfs_blob__fingerprint(a) == pfs_blob__fingerprint(b), "fingerprint");
	pfs_blob__data(b)[5] ^= 0xff;
	CHECK(pfs_blob__data(a)[5] == pfs_blob__data(b)[5], "not the same pages");
	pfs_blob__close(b);
	pfs_blob__close(a);
	return TAP_PASS;
}

/* A non-root process without CAP_IPC_LOCK asking for --mlock over its
 * RLIMIT_MEMLOCK: creation fails and the reason names the limit and the
 * capability, so an operator knows what to grant. */
static int t_mlock_over_limit_nonroot(void)
{
	pid_t pid;
	int st;

#ifdef __SANITIZE_ADDRESS__
	return tap_skip("AddressSanitizer replaces mlock() by a no-op that succeeds");
#endif
	if (geteuid())
		return tap_skip("needs root to drop to an unprivileged user");
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = { 64 << 10, 64 << 10 };
		struct pfs_blob_opts o = { .sz = sizeof(o),
					   .size = 4 << 20,
					   .page = PFS_PAGE_4K,
					   .fill = PFS_FILL_ZERO,
					   .numa_node = -1,
					   .mlock = true };
		struct pfs_blob *b;
		const char *why;

		if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, NULL) ||
		    setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(10);
		b = pfs_blob__create(&o);
		why = pfs_blob_last_error();
		if (b)
			_exit(11);
		if (!why || !strstr(why, "CAP_IPC_LOCK") || !strstr(why, "RLIMIT_MEMLOCK"))
			_exit(12);
		/* Without --mlock the same user gets its blob. */
		o.mlock = false;
		b = pfs_blob__create(&o);
		_exit(b ? 0 : 13);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, "fork/wait");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child exit %d (10 setup, 11 created, "
	      "12 unclear message, 13 plain blob failed)",
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "invalid options rejected with EINVAL", t_invalid_opts },
	{ "4K blob: rounding, fd, seed fill == reference", t_4k_fill_reference },
	{ "seed fill: split-invariant, correct past word 2^32", t_fill_split_and_high_index },
	{ "fingerprint: same seed equal, other seed/bit flip differ", t_fingerprint },
	{ "THP blob or reported fallback", t_thp },
	{ "2M blob with hugepages reserved", t_2m_reserved },
	{ "2M without enough hugepages falls back with a reason", t_2m_missing_falls_back },
	{ "1G blob with a 1 GiB page reserved", t_1g },
	{ "named blob opened by a second process", t_named_second_process },
	{ "named 2M blob without hugetlbfs falls back to /dev/shm", t_named_2m_without_hugetlbfs },
	{ "named 2M blob on a hugetlbfs mount, second process", t_named_hugetlbfs },
	{ "blob from fd shares pages", t_from_fd },
	{ "non-root --mlock over RLIMIT_MEMLOCK: refused, message names CAP_IPC_LOCK",
	  t_mlock_over_limit_nonroot },
};

TAP_MAIN(tests)
