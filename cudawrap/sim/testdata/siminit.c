/* Loads the simulated driver (its constructor parses the CUPROF_SIM_*
 * variables) and calls cuInit: for FuzzCostSpec. */
#include "cuprof_cuda.h"

CUresult cuInit(unsigned int Flags);

int main(void) { return cuInit(0) == CUDA_SUCCESS ? 0 : 2; }
