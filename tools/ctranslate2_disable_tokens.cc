// The host cost of CTranslate2 4.8's token suppression on a CUDA decoder, per decoding step, without a GPU:
//   g++ -O2 -o /tmp/disable_tokens tools/ctranslate2_disable_tokens.cc && /tmp/disable_tokens ROWS IDS STEPS
// ROWS = batch x beam (80 for faster-whisper's batch 16 at beam 5), IDS = suppressed ids per row.
#include <vector>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
// CTranslate2 4.8's DisableTokens::add on a GPU logits tensor (include/ctranslate2/decoding_utils.h): a sorted insert
// per (row, token), called by SuppressTokens::apply as for token: for row.
int main(int argc, char** argv) {
  int rows = atoi(argv[1]), tokens = atoi(argv[2]), steps = atoi(argv[3]);
  const long vocab = 51866, first = 51866 - tokens;
  auto t0 = std::chrono::steady_clock::now();
  size_t total = 0;
  for (int s = 0; s < steps; ++s) {
    std::vector<int> flat;
    for (long t = first; t < vocab; ++t)
      for (long b = 0; b < rows; ++b) {
        int idx = b * vocab + t;
        auto it = std::lower_bound(flat.begin(), flat.end(), idx);
        if (it == flat.end() || *it != idx) flat.insert(it, idx);
      }
    total += flat.size();
  }
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  printf("rows %d tokens %d: %.2f ms per step (%zu indices)\n", rows, tokens, 1e3 * sec / steps, total / steps);
}
