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
	if (cfg.np_chose_shape && !cfg.quiet) {
		char dims[96];
		fprintf(stderr, "torusrun: %s %u: torus %s\n", cfg.np_opt, cfg.np,
			torus_shape_format(&cfg.shape, dims, sizeof(dims)));
	}
	if (cfg.compute_speed > 0 && !cfg.quiet)
		fprintf(stderr, "torusrun: --compute-speed %g: each rank's CPU time between MPI calls counts, so "
			"emulated times vary from run to run\n", cfg.compute_speed);
	rc = emu_job_run(&cfg);
	emu_config_free(&cfg);
	return rc;
}
