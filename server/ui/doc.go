// Package ui is krply's web UI: static pages, scripts and styles embedded in
// the binary, served by the query API's handler at its root when it is built
// with server.WithUI. The pages call only the API beside them (/api/v1/...)
// and load nothing from anywhere else, so the UI works on clusters and
// machines without internet access.
//
// The UI has six views, each addressed by the URL's fragment so that a link
// reproduces what is shown:
//
//   - #/overview: clusters and streams with their state, and a coverage bar
//     per stream over time (baselines marked, gaps hatched, time not yet
//     observed drawn apart);
//   - #/timeline: objects as rows (kind / namespace / name, with a filter),
//     a marker per change coloured by its type, relist items and inferred
//     deletions drawn apart from real watch events, gaps hatched across the
//     rows of the streams they affect; zoom and pan with the mouse or the
//     keyboard; optionally following the change feed from the last record
//     loaded;
//   - #/object: an object's versions with who made each change (a user from
//     the audit log, exact or scored, or a field manager), its field
//     changes, the YAML of any version, a side-by-side diff of any two, and
//     recorded Kubernetes Events about it;
//   - #/namespace: the objects alive in a namespace at a time, under a banner
//     that says whether that picture is complete and, if not, which streams
//     are missing and why;
//   - #/diff: what changed in a scope between two times;
//   - #/plan: a replay plan for review: objects in order, exclusions with
//     reasons, warnings, and the last dry run per object with its conflicts
//     and their field managers. Apply is offered only when the server allows
//     it, and only after the plan's hash is typed.
//
// There is no build step: the assets are plain ES modules, CSS and SVG, as
// committed. Times are shown with their time zone, relative on hover.
package ui
