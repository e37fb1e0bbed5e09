/*
 * Shared by the fuzz targets that end in a struct torus_params (params,
 * config): every line torus_params_json writes ("name_unit": value) must
 * parse back through torus_params_set to the same parameters. Aborts when
 * it does not; returns how many lines it read.
 */
#ifndef FUZZ_PARAMS_JSON_H
#define FUZZ_PARAMS_JSON_H

#include "torus/machine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline size_t fuzz_check_params_json(const struct torus_params *p)
{
	char *text = NULL;
	size_t len = 0, seen = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	torus_params_json(p, f, "");
	fclose(f);
	struct torus_params q;
	torus_params_default(&q);
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char name[64], assign[128], err[256];
		unsigned long long v;
		if (sscanf(line, "\"%63[^\"]\": %llu", name, &v) != 2)
			abort();
		size_t n = strlen(name);
		const char *unit = "";
		if (n > 4 && !strcmp(name + n - 4, "_Bps")) {
			name[n - 4] = '\0';
			unit = "B/s";
		} else if (n > 3 && !strcmp(name + n - 3, "_ps")) {
			name[n - 3] = '\0';
			unit = "ps";
		}
		snprintf(assign, sizeof(assign), "%s=%llu%s", name, v, unit);
		if (torus_params_set(&q, assign, err, sizeof(err)))
			abort(); /* a value out of its range */
		seen++;
	}
	free(text);
	if (memcmp(&q, p, sizeof(q)))
		abort();
	return seen;
}

#endif
