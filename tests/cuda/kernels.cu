// Kernels with assorted signatures: the fat binary tests check the parameter
// sizes that the parser reports against these declarations.
#include <cstdint>

struct Triple {
  double a;
  double b;
  double c;
};

__global__ void k_ints(int a, int b, int *out) {
  out[0] = a + b;
}

__global__ void k_ptrs(const float *in, float *out, size_t n) {
  size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i];
}

__global__ void k_struct(Triple t, double *out) {
  out[0] = t.a + t.b + t.c;
}

__global__ void k_float4(float4 v, char c, float *out) {
  out[0] = v.x + v.y + v.z + v.w + c;
}

__global__ void k_noparams() {}

template <typename T> __global__ void k_templ(T *data, T value, short s) {
  data[threadIdx.x] = value + s;
}

template __global__ void k_templ<double>(double *, double, short);

extern "C" __global__ void k_extern_c(unsigned long long x, unsigned char y,
                                      unsigned long long *out) {
  out[0] = x + y;
}

int main() {
  k_noparams<<<1, 1>>>();
  return 0;
}
