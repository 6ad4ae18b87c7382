// metaguard's runtime: one include for the whole public API.
#pragma once

#include <metaguard/auto_device_map.h>
#include <metaguard/checkpoint.h>
#include <metaguard/checkpoint_reader.h>
#include <metaguard/config.h>
#include <metaguard/device.h>
#include <metaguard/device_map.h>
#include <metaguard/dispatch.h>
#include <metaguard/dtype.h>
#include <metaguard/errors.h>
#include <metaguard/loading.h>
#include <metaguard/module.h>
#include <metaguard/offload_folder.h>
#include <metaguard/offload_hook.h>
#include <metaguard/offload_options.h>
#include <metaguard/policy.h>
#include <metaguard/pretrained_model.h>
#include <metaguard/safetensors.h>
#include <metaguard/checkpoint_weights_map.h>
#include <metaguard/safetensors_weights_map.h>
#include <metaguard/saving.h>
#include <metaguard/size.h>
#include <metaguard/weights_map.h>
