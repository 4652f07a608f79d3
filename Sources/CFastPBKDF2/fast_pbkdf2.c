// PBKDF2-HMAC-SHA1 that keeps each iteration's two SHA-1 compressions in registers (see fast_pbkdf2.h).
//
// Every iteration after the first hashes a 20-byte digest behind a 64-byte HMAC pad, so its input is one padded
// block: the digest's five words, 0x80000000, eight zero words and the bit length 672 (84 bytes). The pad states are
// computed once; the loop never converts to bytes.

#include "fast_pbkdf2.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define ROL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))

static uint32_t load_be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static void store_be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

// MARK: Portable SHA-1

static void sha1_compress_words(uint32_t h[5], const uint32_t block[16]) {
    uint32_t w[80];
    memcpy(w, block, 64);
    for (int i = 16; i < 80; i++) w[i] = ROL(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) { f = (b & c) | (~b & d); k = 0x5A827999u; }
        else if (i < 40) { f = b ^ c ^ d; k = 0x6ED9EBA1u; }
        else if (i < 60) { f = (b & c) | (b & d) | (c & d); k = 0x8F1BBCDCu; }
        else { f = b ^ c ^ d; k = 0xCA62C1D6u; }
        uint32_t temp = ROL(a, 5) + f + e + k + w[i];
        e = d; d = c; c = ROL(b, 30); b = a; a = temp;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e;
}

typedef struct {
    uint32_t h[5];
    uint64_t length;
    unsigned char buffer[64];
    size_t used;
} sha1_ctx;

static void sha1_init(sha1_ctx *c) {
    c->h[0] = 0x67452301u; c->h[1] = 0xEFCDAB89u; c->h[2] = 0x98BADCFEu; c->h[3] = 0x10325476u; c->h[4] = 0xC3D2E1F0u;
    c->length = 0;
    c->used = 0;
}

static void sha1_block(sha1_ctx *c, const unsigned char *p) {
    uint32_t w[16];
    for (int i = 0; i < 16; i++) w[i] = load_be32(p + 4 * i);
    sha1_compress_words(c->h, w);
}

static void sha1_update(sha1_ctx *c, const unsigned char *p, size_t n) {
    c->length += n;
    while (n > 0) {
        size_t take = 64 - c->used < n ? 64 - c->used : n;
        memcpy(c->buffer + c->used, p, take);
        c->used += take; p += take; n -= take;
        if (c->used == 64) { sha1_block(c, c->buffer); c->used = 0; }
    }
}

static void sha1_final_words(sha1_ctx *c, uint32_t out[5]) {
    uint64_t bits = c->length * 8;
    unsigned char pad = 0x80;
    sha1_update(c, &pad, 1);
    unsigned char zero = 0;
    while (c->used != 56) sha1_update(c, &zero, 1);
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha1_update(c, len, 8);
    memcpy(out, c->h, 20);
}

/// One HMAC-pad compression of a 20-byte message given as words: h = compress(pad, digest || padding).
static void portable_step(const uint32_t pad[5], const uint32_t in[5], uint32_t out[5]) {
    uint32_t block[16] = {in[0], in[1], in[2], in[3], in[4], 0x80000000u, 0, 0, 0, 0, 0, 0, 0, 0, 0, 672};
    memcpy(out, pad, 20);
    sha1_compress_words(out, block);
}

/// Iterations 2...n of up to two output blocks: `u` holds each lane's U_1 and `t` its running XOR.
static void portable_iterate(const uint32_t inner[5], const uint32_t outer[5], uint32_t u[2][5], uint32_t t[2][5],
                             int lanes, unsigned long iterations) {
    for (int l = 0; l < lanes; l++) {
        uint32_t v[5];
        for (unsigned long it = 1; it < iterations; it++) {
            portable_step(inner, u[l], v);
            portable_step(outer, v, u[l]);
            for (int j = 0; j < 5; j++) t[l][j] ^= u[l][j];
        }
    }
}

// MARK: SHA extensions (x86-64)

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <cpuid.h>
#include <immintrin.h>

#define SHA_TARGET __attribute__((target("sha,sse4.1,ssse3")))

static int cpu_has_sha_extensions(void) {
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    if (!(c & (1u << 9)) || !(c & (1u << 19))) return 0;  // SSSE3, SSE4.1
    if (__get_cpuid_max(0, 0) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    return (b & (1u << 29)) != 0;  // SHA
}

// N independent chains (lanes) in one instruction stream: one password's two output blocks (N = 2), or two
// passwords' two blocks each (N = 4). The rounds instruction takes several cycles and can start more often, so more
// independent chains keep the SHA unit busier. Each lane continues from its own HMAC pad state.
//
// One step of four rounds for every lane. `W` is the message group for this step, `F` the round function (0-3).
#define NI_FIRST(N, W0)                                                           \
    for (int l = 0; l < N; l++) {                                                 \
        e[l] = _mm_add_epi32(se[l], W0[l]);                                       \
        prev[l] = abcd[l];                                                        \
        abcd[l] = _mm_sha1rnds4_epu32(abcd[l], e[l], 0);                          \
    }
#define NI_STEP(N, W, F)                                                          \
    for (int l = 0; l < N; l++) {                                                 \
        e[l] = _mm_sha1nexte_epu32(prev[l], W[l]);                                \
        prev[l] = abcd[l];                                                        \
        abcd[l] = _mm_sha1rnds4_epu32(abcd[l], e[l], F);                          \
    }
// Next message group into `A` (holding the group four back): msg2(msg1(A, B) ^ C, D).
#define NI_SCHEDULE(N, A, B, C, D)                                                \
    for (int l = 0; l < N; l++) {                                                 \
        A[l] = _mm_sha1msg2_epu32(_mm_xor_si128(_mm_sha1msg1_epu32(A[l], B[l]), C[l]), D[l]); \
    }

/// Defines `NAME`: compresses, for each of N lanes, the block (m0, m1, 0, length) from the lane's saved pad state
/// (sabcd, se). In and out: `m0` is the lanes' ABCD words and `m1` their E word (lane 3); on return they hold the new
/// digest.
#define DEFINE_NI_COMPRESS(NAME, N)                                               \
SHA_TARGET static inline void NAME(const __m128i sabcd[N], const __m128i se[N], __m128i m0[N], __m128i m1[N]) { \
    const __m128i padWord = _mm_set_epi32(0, (int)0x80000000u, 0, 0);             \
    const __m128i lengthWord = _mm_set_epi32(0, 0, 0, 672);                       \
    __m128i w0[N], w1[N], w2[N], w3[N];                                           \
    __m128i abcd[N], e[N], prev[N];                                               \
    for (int l = 0; l < N; l++) {                                                 \
        w0[l] = m0[l];                                                            \
        w1[l] = _mm_or_si128(m1[l], padWord);                                     \
        w2[l] = _mm_setzero_si128();                                              \
        w3[l] = lengthWord;                                                       \
        abcd[l] = sabcd[l];                                                       \
    }                                                                             \
    NI_FIRST(N, w0)                                       /* rounds 0-3 */        \
    NI_STEP(N, w1, 0)                                     /* 4-7 */               \
    NI_STEP(N, w2, 0)                                     /* 8-11 */              \
    NI_STEP(N, w3, 0)                                     /* 12-15 */             \
    NI_SCHEDULE(N, w0, w1, w2, w3) NI_STEP(N, w0, 0)      /* 16-19 */             \
    NI_SCHEDULE(N, w1, w2, w3, w0) NI_STEP(N, w1, 1)      /* 20-23 */             \
    NI_SCHEDULE(N, w2, w3, w0, w1) NI_STEP(N, w2, 1)                              \
    NI_SCHEDULE(N, w3, w0, w1, w2) NI_STEP(N, w3, 1)                              \
    NI_SCHEDULE(N, w0, w1, w2, w3) NI_STEP(N, w0, 1)                              \
    NI_SCHEDULE(N, w1, w2, w3, w0) NI_STEP(N, w1, 1)      /* 36-39 */             \
    NI_SCHEDULE(N, w2, w3, w0, w1) NI_STEP(N, w2, 2)      /* 40-43 */             \
    NI_SCHEDULE(N, w3, w0, w1, w2) NI_STEP(N, w3, 2)                              \
    NI_SCHEDULE(N, w0, w1, w2, w3) NI_STEP(N, w0, 2)                              \
    NI_SCHEDULE(N, w1, w2, w3, w0) NI_STEP(N, w1, 2)                              \
    NI_SCHEDULE(N, w2, w3, w0, w1) NI_STEP(N, w2, 2)      /* 56-59 */             \
    NI_SCHEDULE(N, w3, w0, w1, w2) NI_STEP(N, w3, 3)      /* 60-63 */             \
    NI_SCHEDULE(N, w0, w1, w2, w3) NI_STEP(N, w0, 3)                              \
    NI_SCHEDULE(N, w1, w2, w3, w0) NI_STEP(N, w1, 3)                              \
    NI_SCHEDULE(N, w2, w3, w0, w1) NI_STEP(N, w2, 3)                              \
    NI_SCHEDULE(N, w3, w0, w1, w2) NI_STEP(N, w3, 3)      /* 76-79 */             \
    for (int l = 0; l < N; l++) {                                                 \
        m1[l] = _mm_sha1nexte_epu32(prev[l], se[l]);                              \
        m0[l] = _mm_add_epi32(abcd[l], sabcd[l]);                                 \
    }                                                                             \
}

/// Defines `NAME`: iterations 2...n of N lanes; lane l continues from the pad states inner[l] and outer[l], `u`
/// holds each lane's U_1 and `t` its running XOR.
#define DEFINE_NI_ITERATE(NAME, N, COMPRESS)                                      \
SHA_TARGET static void NAME(const uint32_t *inner[N], const uint32_t *outer[N], uint32_t u[N][5], uint32_t t[N][5], \
                            unsigned long iterations) {                           \
    __m128i iabcd[N], ie[N], oabcd[N], oe[N], m0[N], m1[N], t0[N], t1[N];         \
    for (int l = 0; l < N; l++) {                                                 \
        iabcd[l] = _mm_set_epi32((int)inner[l][0], (int)inner[l][1], (int)inner[l][2], (int)inner[l][3]); \
        ie[l] = _mm_set_epi32((int)inner[l][4], 0, 0, 0);                         \
        oabcd[l] = _mm_set_epi32((int)outer[l][0], (int)outer[l][1], (int)outer[l][2], (int)outer[l][3]); \
        oe[l] = _mm_set_epi32((int)outer[l][4], 0, 0, 0);                         \
        m0[l] = _mm_set_epi32((int)u[l][0], (int)u[l][1], (int)u[l][2], (int)u[l][3]); \
        m1[l] = _mm_set_epi32((int)u[l][4], 0, 0, 0);                             \
        t0[l] = _mm_set_epi32((int)t[l][0], (int)t[l][1], (int)t[l][2], (int)t[l][3]); \
        t1[l] = _mm_set_epi32((int)t[l][4], 0, 0, 0);                             \
    }                                                                             \
    for (unsigned long it = 1; it < iterations; it++) {                           \
        COMPRESS(iabcd, ie, m0, m1);                                              \
        COMPRESS(oabcd, oe, m0, m1);                                              \
        for (int l = 0; l < N; l++) {                                             \
            t0[l] = _mm_xor_si128(t0[l], m0[l]);                                  \
            t1[l] = _mm_xor_si128(t1[l], m1[l]);                                  \
        }                                                                         \
    }                                                                             \
    for (int l = 0; l < N; l++) {                                                 \
        t[l][0] = (uint32_t)_mm_extract_epi32(t0[l], 3);                          \
        t[l][1] = (uint32_t)_mm_extract_epi32(t0[l], 2);                          \
        t[l][2] = (uint32_t)_mm_extract_epi32(t0[l], 1);                          \
        t[l][3] = (uint32_t)_mm_extract_epi32(t0[l], 0);                          \
        t[l][4] = (uint32_t)_mm_extract_epi32(t1[l], 3);                          \
    }                                                                             \
}

DEFINE_NI_COMPRESS(ni_compress2, 2)
DEFINE_NI_COMPRESS(ni_compress4, 4)
DEFINE_NI_ITERATE(ni_iterate2, 2, ni_compress2)
DEFINE_NI_ITERATE(ni_iterate4, 4, ni_compress4)
#else
static int cpu_has_sha_extensions(void) { return 0; }
#endif

// MARK: Driver

static atomic_int path = -1;  // -1 unknown, 0 portable, 1 SHA extensions

static int use_sha_extensions(void) {
    int p = atomic_load(&path);
    if (p < 0) {
        p = cpu_has_sha_extensions();
        atomic_store(&path, p);
    }
    return p;
}

int fast_pbkdf2_uses_sha_extensions(void) { return use_sha_extensions(); }

/// The HMAC-SHA1 pad states of a password: SHA-1 after one block of key ^ 0x36 (inner) and of key ^ 0x5c (outer).
static void hmac_pads(const unsigned char *pass, size_t passlen, sha1_ctx *innerCtx, sha1_ctx *outerCtx) {
    unsigned char key[64];
    memset(key, 0, sizeof key);
    if (passlen > 64) {
        sha1_ctx c;
        uint32_t digest[5];
        sha1_init(&c);
        sha1_update(&c, pass, passlen);
        sha1_final_words(&c, digest);
        for (int i = 0; i < 5; i++) store_be32(key + 4 * i, digest[i]);
    } else if (passlen > 0) {
        memcpy(key, pass, passlen);
    }
    unsigned char ipad[64], opad[64];
    for (int i = 0; i < 64; i++) { ipad[i] = key[i] ^ 0x36; opad[i] = key[i] ^ 0x5c; }
    sha1_init(innerCtx); sha1_update(innerCtx, ipad, 64);
    sha1_init(outerCtx); sha1_update(outerCtx, opad, 64);
}

/// U_1 = HMAC(password, salt || INT(index)) as words; the running XOR starts as U_1.
static void first_iteration(const sha1_ctx *innerCtx, const sha1_ctx *outerCtx, const unsigned char *salt, size_t saltlen,
                            unsigned long index, uint32_t u[5], uint32_t t[5]) {
    unsigned char be[4] = {(unsigned char)(index >> 24), (unsigned char)(index >> 16),
                           (unsigned char)(index >> 8), (unsigned char)index};
    sha1_ctx c = *innerCtx;
    uint32_t v[5];
    sha1_update(&c, salt, saltlen);
    sha1_update(&c, be, 4);
    sha1_final_words(&c, v);
    c = *outerCtx;
    unsigned char vb[20];
    for (int j = 0; j < 5; j++) store_be32(vb + 4 * j, v[j]);
    sha1_update(&c, vb, 20);
    sha1_final_words(&c, u);
    memcpy(t, u, 20);
}

/// Writes output block `index` (1-based), words `t`, into `out` (`outlen` bytes in all).
static void store_block(const uint32_t t[5], unsigned long index, unsigned char *out, size_t outlen) {
    unsigned char block[20];
    for (int j = 0; j < 5; j++) store_be32(block + 4 * j, t[j]);
    size_t offset = (size_t)(index - 1) * 20;
    size_t take = outlen - offset < 20 ? outlen - offset : 20;
    memcpy(out + offset, block, take);
}

int fast_pbkdf2_hmac_sha1(const unsigned char *pass, size_t passlen, const unsigned char *salt, size_t saltlen,
                          unsigned long iterations, unsigned char *out, size_t outlen, int portable) {
    if (iterations < 1 || saltlen > 1024) return 0;
    sha1_ctx innerCtx, outerCtx;
    hmac_pads(pass, passlen, &innerCtx, &outerCtx);
    int fast = !portable && use_sha_extensions();

    unsigned long blocks = (outlen + 19) / 20;
    for (unsigned long first = 1; first <= blocks; first += 2) {
        int lanes = first + 1 <= blocks ? 2 : 1;
        uint32_t u[2][5], t[2][5];
        // A lone last block runs in both lanes; the copy is discarded.
        for (int l = 0; l < 2; l++) first_iteration(&innerCtx, &outerCtx, salt, saltlen, first + (unsigned long)(l < lanes ? l : 0), u[l], t[l]);
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
        if (fast) {
            const uint32_t *inner[2] = {innerCtx.h, innerCtx.h}, *outer[2] = {outerCtx.h, outerCtx.h};
            ni_iterate2(inner, outer, u, t, iterations);
        } else {
            portable_iterate(innerCtx.h, outerCtx.h, u, t, lanes, iterations);
        }
#else
        (void)fast;
        portable_iterate(innerCtx.h, outerCtx.h, u, t, lanes, iterations);
#endif
        for (int l = 0; l < lanes; l++) store_block(t[l], first + (unsigned long)l, out, outlen);
    }
    return 1;
}

int fast_pbkdf2_hmac_sha1_pair(const unsigned char *pass1, size_t passlen1, const unsigned char *salt1, size_t saltlen1,
                               unsigned char *out1, size_t outlen1,
                               const unsigned char *pass2, size_t passlen2, const unsigned char *salt2, size_t saltlen2,
                               unsigned char *out2, size_t outlen2, unsigned long iterations) {
    if (iterations < 1 || saltlen1 > 1024 || saltlen2 > 1024) return 0;
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
    if (use_sha_extensions() && outlen1 > 0 && outlen1 <= 40 && outlen2 > 0 && outlen2 <= 40) {
        sha1_ctx inner[2], outer[2];
        hmac_pads(pass1, passlen1, &inner[0], &outer[0]);
        hmac_pads(pass2, passlen2, &inner[1], &outer[1]);
        const unsigned char *salts[2] = {salt1, salt2};
        size_t saltlens[2] = {saltlen1, saltlen2};
        unsigned long blocks[2] = {(outlen1 + 19) / 20, (outlen2 + 19) / 20};
        // Lanes 0-1: the first password's blocks 1 and 2; lanes 2-3: the second's. A password with one block runs it
        // in both of its lanes; the copy is discarded.
        uint32_t u[4][5], t[4][5];
        const uint32_t *innerStates[4], *outerStates[4];
        for (int l = 0; l < 4; l++) {
            int k = l / 2;
            unsigned long index = (l % 2 == 1 && blocks[k] == 2) ? 2 : 1;
            first_iteration(&inner[k], &outer[k], salts[k], saltlens[k], index, u[l], t[l]);
            innerStates[l] = inner[k].h;
            outerStates[l] = outer[k].h;
        }
        ni_iterate4(innerStates, outerStates, u, t, iterations);
        unsigned char *outs[2] = {out1, out2};
        size_t outlens[2] = {outlen1, outlen2};
        for (int k = 0; k < 2; k++) {
            for (unsigned long b = 1; b <= blocks[k]; b++) store_block(t[2 * k + (int)b - 1], b, outs[k], outlens[k]);
        }
        return 1;
    }
#endif
    return fast_pbkdf2_hmac_sha1(pass1, passlen1, salt1, saltlen1, iterations, out1, outlen1, 0) &&
           fast_pbkdf2_hmac_sha1(pass2, passlen2, salt2, saltlen2, iterations, out2, outlen2, 0);
}
