/* The peer of dist_allreduce_bench: MPI_Allreduce (sum) of the same f32 buffers, timed the same
 * way (a barrier, then one all-reduce; the median of the repetitions). Rank 0 prints JSON lines.
 *   mpicc -O2 peer_mpi_allreduce.c -o peer_mpi_allreduce
 *   mpirun -np 2 ./peer_mpi_allreduce SIZES_MIB REPS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char sizes[256] = "1,16,64";
  int reps = 20;
  if (argc > 1) strncpy(sizes, argv[1], sizeof sizes - 1);
  if (argc > 2) reps = atoi(argv[2]) > 0 ? atoi(argv[2]) : 20;
  for (char* tok = strtok(sizes, ","); tok; tok = strtok(NULL, ",")) {
    size_t mib = (size_t)atol(tok), n = mib * (1u << 20) / sizeof(float);
    float* buf = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; ++i) buf[i] = 1.0f;
    MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double* ts = malloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      ts[r] = (MPI_Wtime() - t0) * 1e3;
    }
    qsort(ts, (size_t)reps, sizeof(double), cmp);
    double ms = ts[reps / 2];
    if (rank == 0)
      printf("{\"name\": \"allreduce_f32_%zuMiB\", \"ranks\": %d, \"ms\": %.4f, \"GBps\": %.3f}\n", mib,
             size, ms, (double)(n * sizeof(float)) / (ms * 1e-3) / 1e9);
    free(ts);
    free(buf);
  }
  MPI_Finalize();
  return 0;
}
