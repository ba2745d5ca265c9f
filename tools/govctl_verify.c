/* govctl keygen / verify and the signing behind `govctl report --sign`:
 * Ed25519 detached signatures (libsodium) over the bytes of report.json, so
 * a signed-off report cannot be edited afterwards. Keys and signatures are
 * hex text files: the secret key file holds libsodium's 64-byte secret key
 * (seed + public key), the public key file 32 bytes, a signature 64 bytes. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fsafe.h"
#include "tools/govctl.h"
#include "report/report.h"

#define MAX_SIGNED (256u << 20) /* reports are KBs to MBs; refuse anything absurd */

/* not inlined: gcc 12 then takes the heap buffer for this frame's (-Wdangling-pointer) */
__attribute__((noinline)) static int read_all(const char *path, unsigned char **out, size_t *len)
{
	struct fsafe_err e;
	char *buf = NULL;
	int rc = fsafe_read_all(path, MAX_SIGNED, 0, &buf, len, &e);
	*out = (unsigned char *)buf; /* heap (NUL-terminated), not this frame */
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

#define MANIFEST_HEAD "govd-report-manifest-v1\n"

/* The digest a manifest lists for name (hex, 64), or false. */
static bool manifest_digest(const char *m, const char *name, char hex[65])
{
	for (const char *l = m; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *sp = strstr(l, "  ");
		const char *nl = strchr(l, '\n');
		if (sp && sp - l == 64 && nl && (size_t)(nl - sp - 2) == strlen(name) &&
		    !strncmp(sp + 2, name, strlen(name))) {
			memcpy(hex, l, 64);
			hex[64] = '\0';
			return true;
		}
	}
	return false;
}
static const char *const report_files[] = { "report.json", "report.md", "report.html" };

int govctl_report_manifest(const char *dir, char **out, char *err, size_t errlen)
{
	size_t cap = 512, len = 0;
	char *m = malloc(cap);
	if (!m)
		return -ENOMEM;
	len = (size_t)snprintf(m, cap, "%s", MANIFEST_HEAD);
	for (size_t i = 0; i < sizeof(report_files) / sizeof(report_files[0]); i++) {
		char path[4200];
		unsigned char *buf, h[crypto_hash_sha256_BYTES];
		size_t n;
		snprintf(path, sizeof(path), "%s/%s", dir, report_files[i]);
		int rc = read_all(path, &buf, &n);
		if (rc) {
			snprintf(err, errlen, "%.300s: %s (a signed report is report.json, report.md "
					      "and report.html together)", path, strerror(-rc));
			free(m);
			return rc;
		}
		size_t from = n, to = n;
		if (!strcmp(report_files[i], "report.html")) {
			/* the sign-off section is rewritten by govctl signoff */
			const char *t = (const char *)buf; /* NUL-terminated by fsafe_read_all */
			const char *b = strstr(t, RP_SIGNOFF_BEGIN);
			const char *e = b ? strstr(b, RP_SIGNOFF_END) : NULL;
			if (b && e) {
				from = (size_t)(b - t) + strlen(RP_SIGNOFF_BEGIN);
				to = (size_t)(e - t);
			}
		}
		crypto_hash_sha256_state st;
		crypto_hash_sha256_init(&st);
		crypto_hash_sha256_update(&st, buf, from);
		crypto_hash_sha256_update(&st, buf + to, n - to);
		crypto_hash_sha256_final(&st, h);
		free(buf);
		char hex[2 * crypto_hash_sha256_BYTES + 1];
		sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
		if (len + sizeof(hex) + strlen(report_files[i]) + 4 > cap) {
			char *nm = realloc(m, cap *= 2);
			if (!nm) {
				free(m);
				return -ENOMEM;
			}
			m = nm;
		}
		len += (size_t)snprintf(m + len, cap - len, "%s  %s\n", hex, report_files[i]);
	}
	*out = m;
	return 0;
}

int govctl_sign_report(const char *dir, const char *keyfile, char *err, size_t errlen)
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
	char *m = NULL;
	rc = govctl_report_manifest(dir, &m, err, errlen);
	if (rc)
		goto wipe_key;
	crypto_sign_detached(sig, NULL, (const unsigned char *)m, strlen(m), sk);
	char path[4200];
	snprintf(path, sizeof(path), "%s/report.manifest", dir);
	struct fsafe_err fe;
	FILE *f = fsafe_fcreate(path, 0644, true, &fe);
	bool bad = !f || fputs(m, f) == EOF;
	if (f && fclose(f))
		bad = true;
	if (bad) {
		snprintf(err, errlen, "%s: %s", path, f ? strerror(errno) : fe.msg);
		rc = -EIO;
		goto free_manifest;
	}
	snprintf(path, sizeof(path), "%s/report.json.sig", dir);
	rc = write_hex(path, sig, sizeof(sig), 0644, 0);
	if (rc)
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
free_manifest:
	free(m);
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

/* ---- owner sign-off ---- */

const char *const rp_roles[3] = { "systems performance", "runtime scheduler", "power modeling" };
static const char *const role_keys[3] = { "systems-performance", "runtime-scheduler",
					  "power-modeling" };
static const char *const decisions[3] = { "GO", "GO-WITH-CONDITIONS", "NO-GO" };

/* A role as given ("power modeling" or "power-modeling"), or -1. */
static int role_index(const char *s)
{
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, rp_roles[i]) || !strcmp(s, role_keys[i]))
			return i;
	return -1;
}

static int decision_index(const char *s)
{
	if (!strcmp(s, "GO WITH CONDITIONS"))
		return 1;
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, decisions[i]))
			return i;
	return -1;
}

/* report.json for REPORT (the file, or a report directory). */
static void report_path(const char *arg, char *out, size_t len)
{
	struct stat st;
	if (!stat(arg, &st) && S_ISDIR(st.st_mode))
		snprintf(out, len, "%s/report.json", arg);
	else
		snprintf(out, len, "%s", arg);
}

static int sha256_file(const char *path, char hex[2 * crypto_hash_sha256_BYTES + 1])
{
	unsigned char *msg, h[crypto_hash_sha256_BYTES];
	size_t len;
	int rc = read_all(path, &msg, &len);
	if (rc)
		return rc;
	crypto_hash_sha256(h, msg, len);
	free(msg);
	sodium_bin2hex(hex, 2 * crypto_hash_sha256_BYTES + 1, h, sizeof(h));
	return 0;
}

/* What an owner's signature covers: the report's bytes (by hash) and the
 * entry's own fields, so neither can be changed afterwards. */
static void signoff_message(char *buf, size_t len, const char *sha, const char *role,
			    const char *decision, const char *name, const char *date)
{
	snprintf(buf, len, "govd-signoff-v1\nreport_sha256=%s\nrole=%s\ndecision=%s\nname=%s\ndate=%s\n",
		 sha, role, decision, name, date);
}

/* Signers file: one "ROLE NAME PUBKEY" per line (ROLE systems-performance,
 * runtime-scheduler or power-modeling; PUBKEY 64 hex digits as govctl keygen
 * writes); '#' starts a comment. Returns 0 or -EINVAL with file:line:col. */
struct signer {
	int role;
	char name[64];
	char pub[2 * crypto_sign_PUBLICKEYBYTES + 1];
};

static int read_signers(const char *path, struct signer *out, size_t cap, size_t *n, char *err,
			size_t errlen)
{
	/* a FIFO or a device here must not hang or feed verify: regular files only */
	struct fsafe_err fe;
	FILE *f = fsafe_fopen_read(path, 1u << 20, &fe);
	if (!f) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, fe.msg[0] ? fe.msg : strerror(e));
		return -(e ? e : EINVAL);
	}
	char line[1024];
	size_t ln = 0;
	int rc = 0;
	*n = 0;
	while (fgets(line, sizeof(line), f)) {
		ln++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char role[64], name[64], pub[160], extra[8];
		int k = sscanf(line, "%63s %63s %159s %7s", role, name, pub, extra);
		if (k <= 0)
			continue;
		int col = (int)(strspn(line, " \t") + 1);
		if (k != 3) {
			snprintf(err, errlen, "%s:%zu:%d: error: want ROLE NAME PUBKEY, got %d field(s)", path,
				 ln, col, k);
			rc = -EINVAL;
			break;
		}
		int r = role_index(role);
		if (r < 0) {
			snprintf(err, errlen,
				 "%s:%zu:%d: error: unknown role '%s' (systems-performance, "
				 "runtime-scheduler, power-modeling)",
				 path, ln, col, role);
			rc = -EINVAL;
			break;
		}
		unsigned char bin[crypto_sign_PUBLICKEYBYTES];
		size_t bl = 0;
		if (strlen(pub) != 2 * sizeof(bin) ||
		    sodium_hex2bin(bin, sizeof(bin), pub, strlen(pub), NULL, &bl, NULL) || bl != sizeof(bin)) {
			snprintf(err, errlen, "%s:%zu:%d: error: public key is not 64 hex digits", path, ln,
				 (int)(strstr(line, pub) - line) + 1);
			rc = -EINVAL;
			break;
		}
		if (*n == cap) {
			snprintf(err, errlen, "%s:%zu:1: error: more than %zu signers", path, ln, cap);
			rc = -E2BIG;
			break;
		}
		out[*n].role = r;
		snprintf(out[*n].name, sizeof(out[*n].name), "%s", name);
		for (size_t i = 0; pub[i]; i++)
			pub[i] = (char)tolower((unsigned char)pub[i]);
		snprintf(out[*n].pub, sizeof(out[*n].pub), "%s", pub);
		(*n)++;
	}
	fclose(f);
	return rc;
}

static const char *jstr(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? v : "";
}

json_t *rp_signoffs_check(const char *report_json, const char *signers_path, size_t *n_bad,
			  char *err, size_t errlen)
{
	struct signer sg[64];
	size_t nsg = 0;
	*n_bad = 0;
	if (sodium_init() < 0) {
		snprintf(err, errlen, "libsodium failed to initialise");
		return NULL;
	}
	if (signers_path && read_signers(signers_path, sg, 64, &nsg, err, errlen))
		return NULL;
	char sha[2 * crypto_hash_sha256_BYTES + 1];
	int rc = sha256_file(report_json, sha);
	if (rc) {
		snprintf(err, errlen, "%s: %s", report_json, strerror(-rc));
		return NULL;
	}
	char path[4200];
	snprintf(path, sizeof(path), "%s.signoffs", report_json);
	json_t *out = json_array();
	struct fsafe_err fe;
	FILE *f = fsafe_fopen_read(path, MAX_SIGNED, &fe);
	if (!f) {
		if (errno == ENOENT)
			return out; /* nobody signed yet */
		snprintf(err, errlen, "%s: %s", path, fe.msg[0] ? fe.msg : strerror(errno));
		json_decref(out);
		return NULL;
	}
	char *line = NULL;
	size_t cap = 0, ln = 0;
	while (getline(&line, &cap, f) > 0) {
		ln++;
		json_error_t je;
		json_t *e = json_loads(line, 0, &je);
		json_t *x = json_object();
		const char *status = "valid";
		char why[400];
		if (!json_is_object(e)) {
			snprintf(why, sizeof(why), "%.200s:%zu:%d: not a sign-off entry: %.100s", path, ln,
				 je.column > 0 ? je.column : 1, e ? "not an object" : je.text);
			status = why;
		} else {
			const char *role = jstr(e, "role"), *dec = jstr(e, "decision"), *name = jstr(e, "name"),
				   *date = jstr(e, "date"), *key = jstr(e, "key"), *sig = jstr(e, "signature");
			json_object_set_new(x, "role", json_string(role));
			json_object_set_new(x, "name", json_string(name));
			json_object_set_new(x, "decision", json_string(dec));
			json_object_set_new(x, "date", json_string(date));
			json_object_set_new(x, "key", json_string(key));
			unsigned char pk[crypto_sign_PUBLICKEYBYTES], sb[crypto_sign_BYTES];
			size_t pl = 0, sl = 0;
			char msg[1024];
			signoff_message(msg, sizeof(msg), jstr(e, "report_sha256"), role, dec, name, date);
			if (role_index(role) < 0 || decision_index(dec) < 0)
				status = "unknown role or decision";
			else if (sodium_hex2bin(pk, sizeof(pk), key, strlen(key), NULL, &pl, NULL) ||
				 pl != sizeof(pk) ||
				 sodium_hex2bin(sb, sizeof(sb), sig, strlen(sig), NULL, &sl, NULL) ||
				 sl != sizeof(sb))
				status = "malformed key or signature";
			else if (crypto_sign_verify_detached(sb, (const unsigned char *)msg, strlen(msg), pk))
				status = "BAD signature (the entry was edited, or not signed by this key)";
			else if (strcmp(jstr(e, "report_sha256"), sha))
				status = "report changed since this signature (sha256 differs): refused";
			else if (signers_path) {
				bool listed = false;
				for (size_t i = 0; i < nsg; i++)
					listed |= sg[i].role == role_index(role) && !strcasecmp(sg[i].pub, key);
				if (!listed) {
					snprintf(why, sizeof(why), "key not listed for role %s in %s: refused",
						 role_keys[role_index(role)], signers_path);
					status = why;
				}
			} else {
				status = "valid signature; key not checked (no --signers list)";
			}
		}
		bool ok = !strncmp(status, "valid", 5);
		*n_bad += !ok;
		json_object_set_new(x, "status", json_string(status));
		json_object_set_new(x, "valid", json_boolean(ok));
		json_array_append_new(out, x);
		json_decref(e);
	}
	free(line);
	fclose(f);
	return out;
}

/* Rewrites the sign-off section of report.html beside report.json with the
 * entries' state (a temporary file renamed over it: never half-written). */
static int rerender_signoff(const char *report_json, json_t *entries, char *err, size_t errlen)
{
	char html[4200], tmp[4300];
	snprintf(html, sizeof(html), "%s", report_json);
	char *slash = strrchr(html, '/');
	snprintf(slash ? slash + 1 : html, sizeof(html) - (size_t)(slash ? slash + 1 - html : 0),
		 "report.html");
	unsigned char *old;
	size_t len;
	int rc = read_all(html, &old, &len);
	if (rc == -ENOENT)
		return 0; /* no HTML beside it: nothing to update */
	if (rc) {
		snprintf(err, errlen, "%.300s: %s", html, strerror(-rc));
		return rc;
	}
	char *txt = realloc(old, len + 1);
	if (!txt) {
		free(old);
		return -ENOMEM;
	}
	txt[len] = '\0';
	char *b = strstr(txt, RP_SIGNOFF_BEGIN), *e = b ? strstr(b, RP_SIGNOFF_END) : NULL;
	json_error_t je;
	json_t *rep = json_load_file(report_json, 0, &je);
	if (!b || !e || !rep) {
		snprintf(err, errlen, "%.300s: no sign-off section (not a govctl report?)", html);
		free(txt);
		json_decref(rep);
		return -EINVAL;
	}
	e += strlen(RP_SIGNOFF_END);
	if (*e == '\n')
		e++;
	snprintf(tmp, sizeof(tmp), "%s.tmp", html);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		snprintf(err, errlen, "%.300s: %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(txt);
		json_decref(rep);
		return -EIO;
	}
	fwrite(txt, 1, (size_t)(b - txt), f);
	rp_render_signoff(rep, entries, f, true);
	fputs(e, f);
	rc = fclose(f) ? -EIO : 0;
	if (!rc && rename(tmp, html))
		rc = -errno;
	if (rc) {
		unlink(tmp);
		snprintf(err, errlen, "%.300s: %s", html, strerror(-rc));
	}
	free(txt);
	json_decref(rep);
	return rc;
}

static void utc_now(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void signoff_usage(FILE *f)
{
	fprintf(f, "usage: govctl signoff REPORT --role ROLE --decision DECISION --key KEYFILE\n"
		   "                      [--name NAME] [--signers FILE]\n"
		   "  REPORT: report.json or its directory; ROLE: systems-performance,\n"
		   "  runtime-scheduler or power-modeling; DECISION: GO, GO-WITH-CONDITIONS or\n"
		   "  NO-GO. Appends a signed entry to report.json.signoffs and updates the\n"
		   "  sign-off section of report.html beside it.\n");
}

int govctl_signoff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "role", required_argument, NULL, 'r' },     { "decision", required_argument, NULL, 'd' },
		{ "key", required_argument, NULL, 'k' },      { "name", required_argument, NULL, 'n' },
		{ "signers", required_argument, NULL, 's' },  { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *role = NULL, *dec = NULL, *key = NULL, *name = NULL, *signers = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r': role = optarg; break;
		case 'd': dec = optarg; break;
		case 'k': key = optarg; break;
		case 'n': name = optarg; break;
		case 's': signers = optarg; break;
		case 'h': signoff_usage(stdout); return GOVCTL_EXIT_OK;
		default: signoff_usage(stderr); return GOVCTL_EXIT_USAGE;
		}
	}
	if (argc - optind != 1 || !role || !dec || !key) {
		signoff_usage(stderr);
		return GOVCTL_EXIT_USAGE;
	}
	int ri = role_index(role), di = decision_index(dec);
	if (ri < 0 || di < 0) {
		fprintf(stderr, "govctl signoff: %s '%s' (%s)\n", ri < 0 ? "unknown role" : "unknown decision",
			ri < 0 ? role : dec,
			ri < 0 ? "systems-performance, runtime-scheduler, power-modeling"
			       : "GO, GO-WITH-CONDITIONS, NO-GO");
		return GOVCTL_EXIT_USAGE;
	}
	if (sodium_init() < 0) {
		fprintf(stderr, "govctl signoff: libsodium failed to initialise\n");
		return GOVCTL_EXIT_FAIL;
	}
	char rp[4096], sha[2 * crypto_hash_sha256_BYTES + 1], err[600];
	report_path(argv[optind], rp, sizeof(rp));
	int rc = sha256_file(rp, sha);
	if (rc) {
		fprintf(stderr, "govctl signoff: %s: %s\n", rp, strerror(-rc));
		return GOVCTL_EXIT_FAIL;
	}
	unsigned char sk[crypto_sign_SECRETKEYBYTES], pk[crypto_sign_PUBLICKEYBYTES],
		sig[crypto_sign_BYTES];
	rc = check_secret_mode(key);
	if (!rc)
		rc = read_hex(key, sk, sizeof(sk));
	if (rc) {
		fprintf(stderr, "govctl signoff: %s: %s\n", key,
			rc == -EPERM ? "readable by group or others: chmod 600 it"
			: rc == -EINVAL ? "not a hex Ed25519 secret key (64 bytes; govctl keygen makes one)"
					: strerror(-rc));
		return GOVCTL_EXIT_FAIL;
	}
	crypto_sign_ed25519_sk_to_pk(pk, sk);
	char pkhex[2 * sizeof(pk) + 1], sighex[2 * sizeof(sig) + 1], date[32], nm[64];
	sodium_bin2hex(pkhex, sizeof(pkhex), pk, sizeof(pk));
	if (!name) {
		/* The key file's name without .key: who the key belongs to. */
		const char *base = strrchr(key, '/');
		snprintf(nm, sizeof(nm), "%s", base ? base + 1 : key);
		char *dot = strstr(nm, ".key");
		if (dot)
			*dot = '\0';
		name = nm;
	}
	for (const char *p = name; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == '"' || *p == '\\') {
			sodium_memzero(sk, sizeof(sk));
			fprintf(stderr, "govctl signoff: --name: no control characters, quotes or backslashes\n");
			return GOVCTL_EXIT_USAGE;
		}
	utc_now(date, sizeof(date));
	char msg[1024];
	signoff_message(msg, sizeof(msg), sha, rp_roles[ri], decisions[di], name, date);
	crypto_sign_detached(sig, NULL, (const unsigned char *)msg, strlen(msg), sk);
	sodium_memzero(sk, sizeof(sk));
	sodium_bin2hex(sighex, sizeof(sighex), sig, sizeof(sig));
	json_t *e = json_object();
	json_object_set_new(e, "role", json_string(rp_roles[ri]));
	json_object_set_new(e, "decision", json_string(decisions[di]));
	json_object_set_new(e, "name", json_string(name));
	json_object_set_new(e, "date", json_string(date));
	json_object_set_new(e, "report_sha256", json_string(sha));
	json_object_set_new(e, "key", json_string(pkhex));
	json_object_set_new(e, "signature", json_string(sighex));
	char *line = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(e);
	char sp[4200];
	snprintf(sp, sizeof(sp), "%s.signoffs", rp);
	int fd = open(sp, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0644);
	bool ok = fd >= 0 && line && dprintf(fd, "%s\n", line) > 0;
	if (fd >= 0 && close(fd))
		ok = false;
	free(line);
	if (!ok) {
		fprintf(stderr, "govctl signoff: cannot append to %s: %s\n", sp, strerror(errno));
		return GOVCTL_EXIT_FAIL;
	}
	size_t bad;
	json_t *entries = rp_signoffs_check(rp, signers, &bad, err, sizeof(err));
	if (!entries || rerender_signoff(rp, entries, err, sizeof(err))) {
		fprintf(stderr, "govctl signoff: signed, but the HTML was not updated: %s\n", err);
		json_decref(entries);
		return GOVCTL_EXIT_FAIL;
	}
	json_decref(entries);
	printf("govctl signoff: %s signed %s as %s (%s) into %s\n", name, decisions[di], rp_roles[ri],
	       date, sp);
	return GOVCTL_EXIT_OK;
}

/* govctl verify REPORT [--signers FILE] [--require-all]: who signed what and
 * when; exit 1 on any entry that is not valid (report edited since, entry
 * edited, key not listed for its role) or, with --require-all, a role
 * nobody signed. */
static int verify_signoffs(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "signers", required_argument, NULL, 's' },
		{ "require-all", no_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	const char *signers = NULL;
	bool all = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 's')
			signers = optarg;
		else if (c == 'a')
			all = true;
		else
			return GOVCTL_EXIT_USAGE;
	}
	if (argc - optind != 1) {
		fprintf(stderr, "usage: govctl verify REPORT [--signers FILE] [--require-all]\n");
		return GOVCTL_EXIT_USAGE;
	}
	if (all && !signers) {
		/* every role signed, by any key at all, proves nothing */
		fprintf(stderr, "govctl verify: --require-all needs --signers FILE (the keys each role "
				"may sign with); without it any key would do\n");
		return GOVCTL_EXIT_USAGE;
	}
	char rp[4096], err[600];
	report_path(argv[optind], rp, sizeof(rp));
	size_t bad;
	json_t *es = rp_signoffs_check(rp, signers, &bad, err, sizeof(err));
	if (!es) {
		fprintf(stderr, "govctl verify: %s\n", err);
		return GOVCTL_EXIT_FAIL;
	}
	printf("%-20s %-18s %-20s %-20s %-18s %s\n", "role", "decision", "name", "date (UTC)", "key",
	       "status");
	size_t missing = 0;
	for (int r = 0; r < 3; r++) {
		bool any = false;
		size_t i;
		json_t *x;
		json_array_foreach(es, i, x)
		{
			if (strcmp(jstr(x, "role"), rp_roles[r]))
				continue;
			any = true;
			printf("%-20s %-18s %-20s %-20s %.16s.. %s\n", rp_roles[r], jstr(x, "decision"),
			       jstr(x, "name"), jstr(x, "date"), jstr(x, "key"), jstr(x, "status"));
		}
		if (!any) {
			printf("%-20s %-18s %-20s %-20s %-18s %s\n", rp_roles[r], "-", "-", "-", "-",
			       "MISSING: not signed");
			missing++;
		}
	}
	size_t i;
	json_t *x;
	json_array_foreach(es, i, x)
	{
		if (role_index(jstr(x, "role")) < 0) /* malformed lines */
			printf("%-20s %s\n", "?", jstr(x, "status"));
	}
	json_decref(es);
	if (bad) {
		fprintf(stderr, "govctl verify: %s: %zu sign-off(s) refused\n", rp, bad);
		return GOVCTL_EXIT_FAIL;
	}
	if (all && missing) {
		fprintf(stderr, "govctl verify: %s: %zu role(s) not signed\n", rp, missing);
		return GOVCTL_EXIT_FAIL;
	}
	return GOVCTL_EXIT_OK;
}

int govctl_verify(int argc, char **argv)
{
	/* Three positionals: the detached signature of --sign; else sign-offs. */
	bool opt = false;
	for (int i = 1; i < argc; i++)
		opt |= argv[i][0] == '-';
	if (argc != 4 || opt)
		return verify_signoffs(argc, argv);
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
	const char *base = strrchr(argv[1], '/');
	base = base ? base + 1 : argv[1];
	bool report = !strcmp(base, "report.json");
	char dir[4096], err[600];
	if (report) {
		/* a report: the signature covers its manifest, every file's digest */
		snprintf(dir, sizeof(dir), "%.*s", base == argv[1] ? 1 : (int)(base - 1 - argv[1]),
			 base == argv[1] ? "." : argv[1]);
		char *m;
		rc = govctl_report_manifest(dir, &m, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "govctl verify: %s\n", err);
			return GOVCTL_EXIT_FAIL;
		}
		msg = (unsigned char *)m;
		len = strlen(m);
	} else {
		rc = read_all(argv[1], &msg, &len);
		if (rc) {
			fprintf(stderr, "govctl verify: %s: %s\n", argv[1], strerror(-rc));
			return GOVCTL_EXIT_FAIL;
		}
	}
	bool ok = crypto_sign_verify_detached(sig, msg, len, pk) == 0;
	if (!ok && report) {
		/* which file: the manifest signed beside it, if it still verifies */
		unsigned char *old;
		size_t olen;
		char mp[4200];
		snprintf(mp, sizeof(mp), "%s/report.manifest", dir);
		if (read_all(mp, &old, &olen) == 0) {
			if (crypto_sign_verify_detached(sig, old, olen, pk) == 0) {
				for (size_t i = 0; i < sizeof(report_files) / sizeof(report_files[0]); i++) {
					char a[65], b[65];
					if (manifest_digest((const char *)old, report_files[i], a) &&
					    manifest_digest((const char *)msg, report_files[i], b) &&
					    strcmp(a, b))
						fprintf(stderr, "govctl verify: %s/%s changed since it was "
								"signed\n", dir, report_files[i]);
				}
			}
			free(old);
		}
	}
	free(msg);
	if (!ok) {
		fprintf(stderr, "govctl verify: %s: BAD signature (%s edited after signing, or another "
				"key)\n",
			argv[1], report ? "the report (report.json, .md or .html)" : "the file");
		return GOVCTL_EXIT_FAIL;
	}
	printf("govctl verify: %s: signature OK%s\n", argv[1],
	       report ? " (report.json, report.md and report.html as signed)" : "");
	return GOVCTL_EXIT_OK;
}
