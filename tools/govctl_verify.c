/* govctl keygen / verify and the signing behind `govctl report --sign`:
 * Ed25519 detached signatures (libsodium) over the bytes of report.json, so
 * a signed-off report cannot be edited afterwards. Keys and signatures are
 * hex text files: the secret key file holds libsodium's 64-byte secret key
 * (seed + public key), the public key file 32 bytes, a signature 64 bytes. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsafe.h"
#include "tools/govctl.h"
#include "tools/govctl_report.h"

#define MAX_SIGNED (256u << 20) /* reports are KBs to MBs; refuse anything absurd */

static int read_all(const char *path, unsigned char **out, size_t *len)
{
	struct fsafe_err e;
	char *buf;
	int rc = fsafe_read_all(path, MAX_SIGNED, 0, &buf, len, &e);
	*out = (unsigned char *)buf;
	return rc;
}

/* A secret key readable by group or others is refused (-EPERM), as ssh
 * does: whoever else can read it can sign in the owner's name. */
static int check_secret_mode(const char *path)
{
	struct stat st;
	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	return st.st_mode & 077 ? -EPERM : 0;
}

/* A hex file of exactly want bytes (whitespace around it allowed). */
static int read_hex(const char *path, unsigned char *out, size_t want)
{
	unsigned char *txt;
	size_t len;
	int rc = read_all(path, &txt, &len);
	if (rc)
		return rc;
	size_t bin_len = 0;
	const char *end = NULL, *stop = (const char *)txt + len;
	rc = sodium_hex2bin(out, want, (const char *)txt, len, " \t\r\n", &bin_len, &end);
	if (rc || bin_len != want)
		rc = -EINVAL;
	for (const char *p = end; !rc && p && p < stop; p++)
		if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
			rc = -EINVAL;
	sodium_memzero(txt, len);
	free(txt);
	return rc;
}

static int write_hex(const char *path, const unsigned char *bin, size_t n, mode_t mode, int excl)
{
	char *hex = malloc(2 * n + 2);
	if (!hex)
		return -ENOMEM;
	sodium_bin2hex(hex, 2 * n + 1, bin, n);
	strcat(hex, "\n");
	/* Never through a planted symlink: a replaced .pub or .sig is
	 * unlinked and created afresh; a secret key is never replaced. */
	struct fsafe_err fe;
	int fd = fsafe_create(path, mode, !excl, &fe);
	int rc = 0;
	if (fd < 0) {
		rc = fd;
		goto free_hex;
	}
	size_t len = strlen(hex);
	if (write(fd, hex, len) != (ssize_t)len)
		rc = -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	if (rc && excl) /* a torn key would block the next keygen */
		unlink(path);
free_hex:
	sodium_memzero(hex, 2 * n + 2);
	free(hex);
	return rc;
}

int govctl_sign_file(const char *path, const char *keyfile, const char *sigpath, char *err,
		     size_t errlen)
{
	if (sodium_init() < 0) {
		snprintf(err, errlen, "libsodium failed to initialise");
		return -EIO;
	}
	unsigned char sk[crypto_sign_SECRETKEYBYTES], sig[crypto_sign_BYTES];
	int rc = check_secret_mode(keyfile);
	if (rc == -EPERM) {
		snprintf(err, errlen, "%s: readable by group or others: chmod 600 it (and make a new key "
				      "if others may have read it)", keyfile);
		return rc;
	}
	if (!rc)
		rc = read_hex(keyfile, sk, sizeof(sk));
	if (rc) {
		snprintf(err, errlen, "%s: %s", keyfile,
			 rc == -EINVAL ? "not a hex Ed25519 secret key (64 bytes; govctl keygen makes one)"
				       : strerror(-rc));
		return rc;
	}
	unsigned char *msg;
	size_t len;
	rc = read_all(path, &msg, &len);
	if (rc) {
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		goto wipe_key;
	}
	crypto_sign_detached(sig, NULL, msg, len, sk);
	free(msg);
	rc = write_hex(sigpath, sig, sizeof(sig), 0644, 0);
	if (rc)
		snprintf(err, errlen, "%s: %s", sigpath, strerror(-rc));
wipe_key:
	sodium_memzero(sk, sizeof(sk));
	return rc;
}

int govctl_keygen(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: govctl keygen BASENAME\n"
				"  writes BASENAME.key (Ed25519 secret key, hex, mode 0600) and\n"
				"  BASENAME.pub (public key, hex) for govctl report --sign / govctl verify\n");
		return GOVCTL_EXIT_USAGE;
	}
	if (sodium_init() < 0) {
		fprintf(stderr, "govctl keygen: libsodium failed to initialise\n");
		return GOVCTL_EXIT_FAIL;
	}
	unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
	crypto_sign_keypair(pk, sk);
	char kp[4096], pp[4096];
	snprintf(kp, sizeof(kp), "%s.key", argv[1]);
	snprintf(pp, sizeof(pp), "%s.pub", argv[1]);
	/* O_EXCL: never overwrite a key, nor follow a link planted at its name. */
	int rc = write_hex(kp, sk, sizeof(sk), 0600, 1);
	sodium_memzero(sk, sizeof(sk));
	if (rc == -EEXIST) {
		fprintf(stderr, "govctl keygen: %s exists; not overwriting a key\n", kp);
		return GOVCTL_EXIT_FAIL;
	}
	if (!rc)
		rc = write_hex(pp, pk, sizeof(pk), 0644, 0);
	if (rc) {
		fprintf(stderr, "govctl keygen: %s\n", strerror(-rc));
		return GOVCTL_EXIT_FAIL;
	}
	printf("secret key: %s (keep private)\npublic key: %s\n", kp, pp);
	return GOVCTL_EXIT_OK;
}

int govctl_verify(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: govctl verify FILE SIGFILE PUBKEY\n"
				"  exit 0: the Ed25519 signature matches FILE's bytes; 1: it does not\n");
		return GOVCTL_EXIT_USAGE;
	}
	if (sodium_init() < 0) {
		fprintf(stderr, "govctl verify: libsodium failed to initialise\n");
		return GOVCTL_EXIT_FAIL;
	}
	unsigned char pk[crypto_sign_PUBLICKEYBYTES], sig[crypto_sign_BYTES];
	int rc = read_hex(argv[3], pk, sizeof(pk));
	if (rc) {
		fprintf(stderr, "govctl verify: %s: %s\n", argv[3],
			rc == -EINVAL ? "not a hex Ed25519 public key (32 bytes)" : strerror(-rc));
		return GOVCTL_EXIT_FAIL;
	}
	rc = read_hex(argv[2], sig, sizeof(sig));
	if (rc) {
		fprintf(stderr, "govctl verify: %s: %s\n", argv[2],
			rc == -EINVAL ? "not a hex Ed25519 signature (64 bytes)" : strerror(-rc));
		return GOVCTL_EXIT_FAIL;
	}
	unsigned char *msg;
	size_t len;
	rc = read_all(argv[1], &msg, &len);
	if (rc) {
		fprintf(stderr, "govctl verify: %s: %s\n", argv[1], strerror(-rc));
		return GOVCTL_EXIT_FAIL;
	}
	bool ok = crypto_sign_verify_detached(sig, msg, len, pk) == 0;
	free(msg);
	if (!ok) {
		fprintf(stderr, "govctl verify: %s: BAD signature (edited after signing, or another key)\n",
			argv[1]);
		return GOVCTL_EXIT_FAIL;
	}
	printf("govctl verify: %s: signature OK\n", argv[1]);
	return GOVCTL_EXIT_OK;
}
