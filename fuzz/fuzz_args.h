/*
 * The fuzz targets of command lines: the input is the arguments, separated
 * by NUL bytes; at most FUZZ_MAX_ARGS of at most 63 bytes each (the rest of
 * a longer one is skipped). argv[0] is `prog`, and argv[argc] is NULL.
 */
#ifndef FUZZ_ARGS_H
#define FUZZ_ARGS_H

#include <stddef.h>
#include <stdint.h>

#define FUZZ_MAX_ARGS 16

struct fuzz_args {
	char text[FUZZ_MAX_ARGS][64];
	char *argv[FUZZ_MAX_ARGS + 2];
	int argc;
};

static inline void fuzz_args_split(struct fuzz_args *a, const char *prog, const uint8_t *data, size_t size)
{
	a->argc = 1;
	a->argv[0] = (char *)prog;
	for (size_t i = 0; i < size && a->argc <= FUZZ_MAX_ARGS;) {
		size_t n = 0;
		char *t = a->text[a->argc - 1];
		while (i < size && data[i] && n < 63)
			t[n++] = (char)data[i++];
		t[n] = '\0';
		a->argv[a->argc++] = t;
		while (i < size && data[i]) /* the rest of an over-long argument */
			i++;
		i++;
	}
	a->argv[a->argc] = NULL;
}

#endif
