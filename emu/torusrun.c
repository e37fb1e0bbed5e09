/* torusrun: the launcher (mpirun plus the Blue Gene control system). */
#include "emu_internal.h"

int main(int argc, char **argv)
{
	struct emu_job_config cfg;
	char err[512];
	int rc = emu_config_parse(argc, argv, &cfg, err, sizeof(err));
	if (rc == 1)
		return 0;
	if (rc) {
		fprintf(stderr, "torusrun: %s\n", err);
		return 2;
	}
	rc = emu_job_run(&cfg);
	emu_config_free(&cfg);
	return rc;
}
