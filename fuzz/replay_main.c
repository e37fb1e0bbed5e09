/*
 * Replays a fuzz target's corpus without libFuzzer: every file named on the
 * command line (or found in a directory named there) is read and passed to
 * LLVMFuzzerTestOneInput once. Builds without clang run the corpus this way,
 * so every seed and every input that once crashed a target is a regression
 * test in the default suite, under gcc and its sanitizers.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int replay_file(const char *path, unsigned *count)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
		return -1;
	}
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	while (buf) {
		len += fread(buf + len, 1, cap - len, f);
		if (len < cap)
			break;
		uint8_t *nbuf = realloc(buf, cap * 2);
		if (!nbuf) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = nbuf;
		cap *= 2;
	}
	int bad = ferror(f);
	fclose(f);
	if (!buf || bad) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		free(buf);
		return -1;
	}
	/* an exact-size copy, so ASan sees a read past the input's end */
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact) {
		free(buf);
		return -1;
	}
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	++*count;
	return 0;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int replay_path(const char *path, unsigned *count)
{
	struct stat st;
	if (stat(path, &st)) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return replay_file(path, count);
	DIR *d = opendir(path);
	if (!d) {
		fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			char **nn = realloc(names, cap * sizeof(*names));
			if (!nn) {
				rc = -1;
				break;
			}
			names = nn;
		}
		size_t len = strlen(path) + strlen(e->d_name) + 2;
		if (!(names[n] = malloc(len))) {
			rc = -1;
			break;
		}
		snprintf(names[n++], len, "%s/%s", path, e->d_name);
	}
	closedir(d);
	/* a fixed order, so a failure repeats the same way */
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (!rc && replay_path(names[i], count))
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	int rc = 0;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		printf("usage: %s FILE|DIR...\n\nRun the fuzz target once on every input file (directories are\n"
		       "read recursively, in name order). Built without libFuzzer; the libFuzzer build of\n"
		       "the same target (cmake --preset fuzz) searches for new inputs.\n",
		       argv[0]);
		return argc < 2 ? 2 : 0;
	}
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++)
		if (replay_path(argv[i], &count))
			rc = 1;
	if (!count) {
		fprintf(stderr, "replay: no inputs found\n");
		return 1;
	}
	printf("replayed %u inputs%s\n", count, rc ? " (some could not be read)" : "");
	return rc;
}
