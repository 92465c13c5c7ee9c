// Kernels the GPU tests launch (through CuPy, tests/gpu_kernels.py) to control exactly which pages of
// managed memory a kernel touches and to check what those pages hold afterwards:
//
//   touch_pages  one thread per 4 KiB page of a strided run of pages: writes a known pattern over the
//                whole page, or reads the page and adds its words into a running sum;
//   gather_sum   one thread block per source buffer, the sources' addresses read from a pointer array
//                in device memory: the launch's arguments name only that array and the output, so
//                the sources are invisible to anything that scans a kernel's arguments;
//   checksum     a position-weighted sum of a range of words.
//
// Compiled at run time by NVRTC, so it includes no headers. The pattern and weight functions are
// also compiled as host code by the CPU tests, which check them against their numpy counterparts.

#define WORDS_PER_PAGE 1024  // 32-bit words in a 4 KiB page

#ifndef __CUDACC__
#define __host__
#define __device__
#endif

// The word the pattern of `seed` puts at word index `word` of a buffer (a 32-bit integer hash).
__host__ __device__ inline unsigned int pattern_word(unsigned int seed, unsigned long long word) {
  unsigned int x = (unsigned int)word + seed * 0x9e3779b9u;
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// A word's share of the checksum: its value times a weight that depends on its index, so that words
// moved or swapped within a range change the sum.
__host__ __device__ inline unsigned long long weighted_word(unsigned int value, unsigned long long word) {
  return (unsigned long long)value * ((word & 0xffffull) + 1ull);
}

#ifdef __CUDACC__

// Pages first_page, first_page + stride, ... (`pages` of them) of the buffer at `base`, one thread
// each. write != 0: every word of the page takes the pattern of `seed` (indices count from `base`).
// write == 0: the page's words are summed into *sum.
extern "C" __global__ void touch_pages(unsigned int* base, long long first_page, long long pages, long long stride,
                                       unsigned int seed, int write, unsigned long long* sum) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pages) return;
  const unsigned long long first_word = (unsigned long long)(first_page + i * stride) * WORDS_PER_PAGE;
  unsigned int* page = base + first_word;
  if (write) {
    for (int w = 0; w < WORDS_PER_PAGE; ++w) page[w] = pattern_word(seed, first_word + w);
  } else {
    unsigned long long total = 0;
    for (int w = 0; w < WORDS_PER_PAGE; ++w) total += page[w];
    atomicAdd(sum, total);
  }
}

// out[b] += the checksum of the first `words` words of sources[b], for b < count; one thread block
// per source. `sources` holds the buffers' addresses and lives in device memory.
extern "C" __global__ void gather_sum(const unsigned long long* sources, long long count, long long words,
                                      unsigned long long* out) {
  const long long b = blockIdx.x;
  if (b >= count) return;
  const unsigned int* source = reinterpret_cast<const unsigned int*>(sources[b]);
  unsigned long long total = 0;
  for (long long w = threadIdx.x; w < words; w += blockDim.x) total += weighted_word(source[w], w);
  atomicAdd(out + b, total);
}

// *out += the checksum of data[0:words].
extern "C" __global__ void checksum(const unsigned int* data, long long words, unsigned long long* out) {
  unsigned long long total = 0;
  for (long long w = (long long)blockIdx.x * blockDim.x + threadIdx.x; w < words; w += (long long)gridDim.x * blockDim.x)
    total += weighted_word(data[w], w);
  atomicAdd(out, total);
}

#endif  // __CUDACC__
