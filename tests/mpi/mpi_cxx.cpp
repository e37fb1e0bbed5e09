// A C++ MPI program, built with torusmpicxx: std::vector buffers, the
// standard library's algorithms and strings, and the C API as C++ programs
// call it (mpi.h is included from C++). Every result is checked; rank 0
// prints the verdict and the exit status says it.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

namespace {

int checks = 0, failed = 0;

void check(bool ok, const std::string &what)
{
	checks++;
	if (!ok) {
		failed++;
		std::fprintf(stderr, "cxx: FAILED: %s\n", what.c_str());
	}
}

} // namespace

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank = 0, size = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);

	// around the ring, in vectors
	const int n = 1000;
	std::vector<int> mine(n), theirs(n, -1);
	std::iota(mine.begin(), mine.end(), rank * n);
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	MPI_Sendrecv(mine.data(), n, MPI_INT, right, 7, theirs.data(), n, MPI_INT, left, 7, MPI_COMM_WORLD,
		     MPI_STATUS_IGNORE);
	std::vector<int> want(n);
	std::iota(want.begin(), want.end(), left * n);
	check(theirs == want, "ring: rank " + std::to_string(rank) + " got the wrong vector");

	// a reduction of doubles
	std::vector<double> x(64), sum(64, 0.0);
	for (std::size_t i = 0; i < x.size(); i++)
		x[i] = rank + 0.5 * static_cast<double>(i);
	MPI_Allreduce(x.data(), sum.data(), static_cast<int>(x.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	bool ok = true;
	for (std::size_t i = 0; i < sum.size(); i++)
		ok = ok && sum[i] == size * (size - 1) / 2.0 + size * 0.5 * static_cast<double>(i);
	check(ok, "allreduce of doubles");

	// everyone's name, gathered as strings of different lengths
	std::string name = "rank-" + std::string(static_cast<std::size_t>(rank % 5 + 1), '*') + std::to_string(rank);
	int len = static_cast<int>(name.size());
	std::vector<int> lens(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
	MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD);
	std::partial_sum(lens.begin(), lens.end() - 1, displs.begin() + 1);
	std::string all(static_cast<std::size_t>(std::accumulate(lens.begin(), lens.end(), 0)), ' ');
	MPI_Allgatherv(name.data(), len, MPI_CHAR, &all[0], lens.data(), displs.data(), MPI_CHAR, MPI_COMM_WORLD);
	for (int r = 0; r < size; r++) {
		std::string w = "rank-" + std::string(static_cast<std::size_t>(r % 5 + 1), '*') + std::to_string(r);
		check(all.compare(static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]), w.size(), w) == 0,
		      "allgatherv: the name of rank " + std::to_string(r));
	}

	// all-to-all of vectors, then sorted
	std::vector<long> out(static_cast<std::size_t>(size) * 3), in(out.size());
	for (int d = 0; d < size; d++)
		for (int k = 0; k < 3; k++)
			out[static_cast<std::size_t>(d * 3 + k)] = 1000L * rank + 10 * d + k;
	MPI_Alltoall(out.data(), 3, MPI_LONG, in.data(), 3, MPI_LONG, MPI_COMM_WORLD);
	for (int s = 0; s < size; s++)
		for (int k = 0; k < 3; k++)
			check(in[static_cast<std::size_t>(s * 3 + k)] == 1000L * s + 10 * rank + k,
			      "alltoall: block from " + std::to_string(s));
	check(std::is_sorted(in.begin(), in.end()), "alltoall: blocks in rank order");

	int all_checks[2] = {checks, failed}, total[2] = {0, 0};
	MPI_Reduce(all_checks, total, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		if (total[1])
			std::printf("cxx: %d of %d checks FAILED\n", total[1], total[0]);
		else
			std::printf("cxx: all passed: %d checks on %d ranks\n", total[0], size);
	}
	MPI_Finalize();
	return failed ? 1 : 0;
}
