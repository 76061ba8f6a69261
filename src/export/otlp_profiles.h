/* SPDX-License-Identifier: GPL-2.0 */
/*
 * otlp_profiles.h - a struct profile as an OTLP profiles request.
 *
 * Owns: the conversion of one interval's profile (src/profile/profile.h,
 * the pprof model) into an ExportProfilesServiceRequest of OTLP profiles
 * v1development (opentelemetry/proto/profiles/v1development/
 * profiles.proto): one ProfilesDictionary (mapping, location, function,
 * stack, string and attribute tables, index 0 the zero value as the
 * spec requires), one ResourceProfiles per process (the sample's "pid"
 * label; samples without one go under profd's own host resource), scope
 * "profd", one Profile per sample type (the spec's Profile has one
 * sample_type, each sample one value), the other labels as sample
 * attributes (keys as the labels'), the mapping's build id as attribute
 * "process.executable.build_id.gnu". See otlp_profiles.c for the details.
 */
#ifndef PROFD_EXPORT_OTLP_PROFILES_H
#define PROFD_EXPORT_OTLP_PROFILES_H

#include <stddef.h>
#include <stdint.h>

#include "export/resource.h"
#include "profile/profile.h"

/*
 * otlp_profiles_encode - serialize @p as an ExportProfilesServiceRequest.
 * Resources come from @res (borrowed; per pid, cached there). On success
 * returns 0 and a malloc'ed body in *@out (*@len bytes, *@nsamples: the
 * profile's samples, for otlp_export()); -EINVAL for ids out of range or
 * too many sample types, -ENOMEM otherwise.
 */
int otlp_profiles_encode(const struct profile *p, struct otlp_resources *res,
			 void **out, size_t *len, uint64_t *nsamples);

#endif /* PROFD_EXPORT_OTLP_PROFILES_H */
