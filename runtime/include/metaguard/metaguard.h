// metaguard's runtime: one include for the whole public API.
#pragma once

#include <metaguard/device.h>
#include <metaguard/device_map.h>
#include <metaguard/errors.h>
#include <metaguard/policy.h>
#include <metaguard/size.h>
