/* SHA-256 and HMAC-SHA256 against the published test vectors (FIPS 180-4
 * examples, RFC 4231), the constant-time comparison, and where a job's
 * secret comes from (options, files, environment) with its errors. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sha256.h"
#include "dist/dist_internal.h"
#include "suites.h"

Suite *secret_suite(void);

static void to_hex(const unsigned char *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void assert_sha256(const void *data, size_t n, const char *hex)
{
    unsigned char d[32];
    char got[65];
    ct__sha256(data, n, d);
    to_hex(d, 32, got);
    ck_assert_str_eq(got, hex);
}

START_TEST(sha256_matches_fips_examples)
{
    static const char two_blocks[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    char *million = malloc(1000000);
    ck_assert_ptr_nonnull(million);
    memset(million, 'a', 1000000);
    assert_sha256("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_sha256("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_sha256(two_blocks, sizeof two_blocks - 1,
                  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    assert_sha256(million, 1000000,
                  "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* Fed in uneven pieces, the same digest. */
    {
        ct__sha256_ctx c;
        unsigned char d[32];
        char got[65];
        size_t at = 0, step = 1;
        ct__sha256_init(&c);
        while (at < 1000000) {
            size_t n = 1000000 - at < step ? 1000000 - at : step;
            ct__sha256_update(&c, million + at, n);
            at += n;
            step = step * 3 % 1031 + 1;
        }
        ct__sha256_final(&c, d);
        to_hex(d, 32, got);
        ck_assert_str_eq(got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    }
    free(million);
}
END_TEST

static void assert_hmac(const void *key, size_t klen, const char *msg, const char *hex)
{
    unsigned char d[32];
    char got[65];
    const void *parts[] = {msg};
    size_t lens[] = {strlen(msg)};
    ct__hmac_sha256(key, klen, parts, lens, 1, d);
    to_hex(d, 32, got);
    ck_assert_str_eq(got, hex);
}

START_TEST(hmac_matches_rfc4231)
{
    unsigned char k1[20], k6[131];
    memset(k1, 0x0b, sizeof k1);
    memset(k6, 0xaa, sizeof k6);
    assert_hmac(k1, sizeof k1, "Hi There",
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    assert_hmac("Jefe", 4, "what do ya want for nothing?",
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    /* A key longer than the block is hashed first. */
    assert_hmac(k6, sizeof k6, "Test Using Larger Than Block-Size Key - Hash Key First",
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    /* Parts are concatenated: "what do ya" + " want for nothing?". */
    {
        const void *parts[] = {"what do ya", " want", " for nothing?"};
        size_t lens[] = {10, 5, 13};
        unsigned char d[32];
        char got[65];
        ct__hmac_sha256("Jefe", 4, parts, lens, 3, d);
        to_hex(d, 32, got);
        ck_assert_str_eq(got, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }
}
END_TEST

START_TEST(consttime_equal_and_random)
{
    unsigned char a[32], b[32];
    OK(ct__random_bytes(a, sizeof a));
    memcpy(b, a, sizeof b);
    ck_assert(ct__equal_consttime(a, b, sizeof a));
    for (size_t i = 0; i < sizeof a; i += 31) {
        b[i] ^= 0x10;
        ck_assert(!ct__equal_consttime(a, b, sizeof a));
        b[i] ^= 0x10;
    }
    OK(ct__random_bytes(b, sizeof b));
    ck_assert(!ct__equal_consttime(a, b, sizeof a)); /* 2^-256 to fail by chance */
}
END_TEST

/* ---- where the secret comes from ------------------------------------------------------ */

static void key_of(const char *secret, unsigned char key[32])
{
    static const char label[] = "cputrain dist secret v1";
    const void *parts[] = {label};
    size_t lens[] = {sizeof label - 1};
    ct__hmac_sha256(secret, strlen(secret), parts, lens, 1, key);
}

static void write_text(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(path, mode), 0);
}

START_TEST(secret_sources_and_errors)
{
    const char *s = "0123456789abcdef-secret";
    char dir[] = "/tmp/ct-secret-XXXXXX", path[256];
    unsigned char want[32];
    ct__dist_member m;
    ct_dist_options *o;
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/secret", dir);
    key_of(s, want);
    unsetenv("CPUTRAIN_DIST_SECRET");
    unsetenv("CPUTRAIN_DIST_SECRET_FILE");

    /* None: the job is unauthenticated. */
    memset(&m, 0xff, sizeof m);
    OK(ct__dist_secret_load(NULL, &m));
    ck_assert_int_eq(m.has_secret, 0);

    /* The environment's value; the key is not the secret's own bytes. */
    setenv("CPUTRAIN_DIST_SECRET", s, 1);
    OK(ct__dist_secret_load(NULL, &m));
    ck_assert_int_eq(m.has_secret, 1);
    ck_assert(ct__equal_consttime(m.secret_key, want, 32));

    /* A file with a trailing newline holds the same secret; both variables
     * at once are refused. */
    write_text(path, "0123456789abcdef-secret\n", 0600);
    setenv("CPUTRAIN_DIST_SECRET_FILE", path, 1);
    ASSERT_ERROR_HAS(ct__dist_secret_load(NULL, &m), CT_ERR_INVALID_ARG,
                     "both CPUTRAIN_DIST_SECRET_FILE and CPUTRAIN_DIST_SECRET");
    unsetenv("CPUTRAIN_DIST_SECRET");
    memset(&m, 0, sizeof m);
    OK(ct__dist_secret_load(NULL, &m));
    ck_assert(m.has_secret && ct__equal_consttime(m.secret_key, want, 32));

    /* Options win over the environment; the later key of the two wins. */
    OK(ct_dist_options_create(&o));
    OK(ct_dist_options_set(o, "secret", "another-secret-of-enough-bytes"));
    OK(ct__dist_secret_load(o, &m));
    ck_assert(!ct__equal_consttime(m.secret_key, want, 32));
    OK(ct_dist_options_set(o, "secret_file", path));
    OK(ct__dist_secret_load(o, &m));
    ck_assert(ct__equal_consttime(m.secret_key, want, 32));
    ASSERT_ERROR_HAS(ct_dist_options_set(o, "secret", ""), CT_ERR_INVALID_ARG, "secret");

    /* A file that is missing, empty or a folder is named. */
    OK(ct_dist_options_set(o, "secret_file", dir));
    ASSERT_ERROR_HAS(ct__dist_secret_load(o, &m), CT_ERR_IO, dir);
    write_text(path, "\n", 0600);
    OK(ct_dist_options_set(o, "secret_file", path));
    ASSERT_ERROR_HAS(ct__dist_secret_load(o, &m), CT_ERR_INVALID_ARG, "empty");
    unlink(path);
    ASSERT_ERROR_HAS(ct__dist_secret_load(o, &m), CT_ERR_IO, path);
    unsetenv("CPUTRAIN_DIST_SECRET_FILE");
    OK(ct__dist_secret_load(NULL, &m));
    ck_assert_int_eq(m.has_secret, 0);
    ct_dist_options_free(o);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

Suite *secret_suite(void)
{
    Suite *s = suite_create("secret");
    TCase *tc = tcase_create("secret");
    tcase_add_test(tc, sha256_matches_fips_examples);
    tcase_add_test(tc, hmac_matches_rfc4231);
    tcase_add_test(tc, consttime_equal_and_random);
    tcase_add_test(tc, secret_sources_and_errors);
    suite_add_tcase(s, tc);
    return s;
}
