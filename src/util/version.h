/* SPDX-License-Identifier: GPL-2.0 */
/*
 * version.h - profd's version: --version, the OTLP scope and the
 * telemetry.sdk/service version of resources.
 */
#ifndef PROFD_UTIL_VERSION_H
#define PROFD_UTIL_VERSION_H

#define PROFD_VERSION "0.1.0"

#endif /* PROFD_UTIL_VERSION_H */
