// Every LibTorch public header and metaguard's, and no use of either: the
// checks must find nothing (robustness-real-code.test).
#include <metaguard/metaguard.h>
#include <torch/torch.h>

int main() { return 0; }
