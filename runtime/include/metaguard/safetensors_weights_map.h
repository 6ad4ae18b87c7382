// Kept for code written against earlier releases: the class is now
// CheckpointWeightsMap, which reads every checkpoint format.
#pragma once

#include <metaguard/checkpoint_weights_map.h>
