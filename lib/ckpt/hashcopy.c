/*
 * hashcopy.c - the two per-byte costs of a checkpoint: XXH3 hashing and
 * copying a read buffer into a tensor.
 *
 * A verified restore must touch every byte with the CPU at least once to
 * hash it, where a raw read touches none; on a machine whose cores are
 * busy, that pass is what separates restore from the raw read (see
 * docs/checkpoint.md, "Where restore time goes").  So both passes are
 * made as cheap as the hardware allows:
 *
 *  - hashing uses libxxhash's runtime dispatch on x86-64 (AVX2 or
 *    AVX-512 where the CPU has them, SSE2 otherwise).  The digest is the
 *    same XXH3-64 whatever the code path, so files stay compatible.
 *  - the copy hashes a cache-sized block first (that pulls it from
 *    memory into L2) and then writes it to the tensor with streaming
 *    stores, which skip the read-for-ownership of the destination and do
 *    not evict the block still being hashed: two memory passes per byte
 *    instead of three.
 *  - a restore that must be able to put the old contents back (undo.c)
 *    copies each block of the destination aside just before that block is
 *    overwritten, in the same loop: the work is spread over the read
 *    instead of one copy of a whole tensor that leaves the I/O queue to
 *    drain while it runs.
 *  - both copies ask for the next block while they stream this one (one
 *    prefetch into L2 per line: the destination's old bytes while keeping,
 *    the read buffer's while copying), so the block after comes from
 *    memory while the current one is worked on.  The loop is bound by
 *    memory latency on one core, not by instructions (measured: -12% of
 *    a kept restore's CPU, docs/notes/checkpoint.md, "Prefetching the
 *    next block").
 */
#include <string.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#include <xxh_x86dispatch.h> /* XXH3_64bits_update_dispatch */
#endif

#include "internal.h"

void ckpt__hash_update(XXH3_state_t *st, const void *p, size_t n)
{
#if defined(__x86_64__)
	XXH3_64bits_update_dispatch(st, p, n);
#else
	XXH3_64bits_update(st, p, n);
#endif
}

#if defined(__x86_64__)
/* Copy n bytes with streaming stores; meanwhile prefetch the first pf_n
 * bytes at pf (the next block's source; pf_n 0: none). */
static void copy_stream(uint8_t *dst, const uint8_t *src, size_t n,
			const uint8_t *pf, size_t pf_n)
{
	size_t head = (16 - ((uintptr_t)dst & 15)) & 15;

	if (n < 256) {
		memcpy(dst, src, n);
		return;
	}
	memcpy(dst, src, head);
	dst += head;
	src += head;
	n -= head;
	for (; n >= 64; n -= 64, dst += 64, src += 64) {
		if (pf_n >= 64) { /* a hint: never faults */
			_mm_prefetch((const char *)pf, _MM_HINT_T1);
			pf += 64;
			pf_n -= 64;
		}
		__m128i a = _mm_loadu_si128((const __m128i *)src);
		__m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
		__m128i d = _mm_loadu_si128((const __m128i *)(src + 48));

		_mm_stream_si128((__m128i *)dst, a);
		_mm_stream_si128((__m128i *)(dst + 16), b);
		_mm_stream_si128((__m128i *)(dst + 32), c);
		_mm_stream_si128((__m128i *)(dst + 48), d);
	}
	memcpy(dst, src, n);
}
#endif

#define HASH_COPY_BLOCK (64u << 10)

void ckpt__copy_stream(uint8_t *dst, const uint8_t *src, uint64_t n)
{
	while (n > 0) {
		size_t k = n < HASH_COPY_BLOCK ? (size_t)n : HASH_COPY_BLOCK;
		size_t nk = n - k < HASH_COPY_BLOCK ? (size_t)(n - k)
						    : HASH_COPY_BLOCK;

#if defined(__x86_64__)
		copy_stream(dst, src, k, src + k, nk);
#else
		memcpy(dst, src, k);
#endif
		dst += k;
		src += k;
		n -= k;
	}
#if defined(__x86_64__)
	_mm_sfence();
#endif
}

#if defined(__x86_64__)
/* Swap one block: 64 bytes at a time, a's new contents streamed (a is
 * 16-byte aligned), b's too when b is; the next block of both asked for
 * meanwhile. */
static void swap_block(uint8_t *a, uint8_t *b, size_t n, const uint8_t *pa,
		       const uint8_t *pb, size_t pf_n)
{
	int b_al = !((uintptr_t)b & 15);

	for (; n >= 64; n -= 64, a += 64, b += 64) {
		if (pf_n >= 64) { /* hints: never fault */
			_mm_prefetch((const char *)pa, _MM_HINT_T1);
			_mm_prefetch((const char *)pb, _MM_HINT_T1);
			pa += 64;
			pb += 64;
			pf_n -= 64;
		}
		for (int i = 0; i < 64; i += 16) {
			__m128i x = _mm_load_si128((const __m128i *)(a + i));
			__m128i y = _mm_loadu_si128((const __m128i *)(b + i));

			_mm_stream_si128((__m128i *)(a + i), y);
			if (b_al)
				_mm_stream_si128((__m128i *)(b + i), x);
			else
				_mm_storeu_si128((__m128i *)(b + i), x);
		}
	}
	for (size_t i = 0; i < n; i++) {
		uint8_t c = a[i];

		a[i] = b[i];
		b[i] = c;
	}
}
#endif

void ckpt__swap_stream(uint8_t *a, uint8_t *b, uint64_t n)
{
#if defined(__x86_64__)
	size_t head = (16 - ((uintptr_t)a & 15)) & 15;

	head = head < n ? head : (size_t)n;
	for (size_t i = 0; i < head; i++) {
		uint8_t c = a[i];

		a[i] = b[i];
		b[i] = c;
	}
	a += head;
	b += head;
	n -= head;
	while (n > 0) {
		size_t k = n < HASH_COPY_BLOCK ? (size_t)n : HASH_COPY_BLOCK;
		size_t nk = n - k < HASH_COPY_BLOCK ? (size_t)(n - k)
						    : HASH_COPY_BLOCK;

		swap_block(a, b, k, a + k, b + k, nk);
		a += k;
		b += k;
		n -= k;
	}
	_mm_sfence();
#else
	uint8_t tmp[256];

	while (n > 0) {
		size_t k = n < sizeof tmp ? (size_t)n : sizeof tmp;

		memcpy(tmp, a, k);
		memcpy(a, b, k);
		memcpy(b, tmp, k);
		a += k;
		b += k;
		n -= k;
	}
#endif
}

void ckpt__hash_copy(XXH3_state_t *st, uint8_t *dst, const uint8_t *src,
		     uint64_t n)
{
	ckpt__hash_copy_keep(st, dst, src, n, NULL);
}

void ckpt__hash_copy_keep(XXH3_state_t *st, uint8_t *dst, const uint8_t *src,
			  uint64_t n, uint8_t *keep)
{
	while (n > 0) {
		size_t k = n < HASH_COPY_BLOCK ? (size_t)n : HASH_COPY_BLOCK;
		size_t nk = n - k < HASH_COPY_BLOCK ? (size_t)(n - k)
						    : HASH_COPY_BLOCK;

#if defined(__x86_64__)
		if (keep) /* the old bytes aside, before they are overwritten */
			copy_stream(keep, dst, k, dst + k, nk);
		ckpt__hash_update(st, src, k);
		copy_stream(dst, src, k, src + k, nk);
#else
		if (keep)
			memcpy(keep, dst, k);
		ckpt__hash_update(st, src, k);
		memcpy(dst, src, k);
#endif
		if (keep)
			keep += k;
		dst += k;
		src += k;
		n -= k;
	}
#if defined(__x86_64__)
	_mm_sfence(); /* streaming stores are visible before the caller goes on */
#endif
}
