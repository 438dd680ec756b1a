// Package tutorials holds no code: its tests build the code of the
// tutorials in this directory (custom-pass.md, property-testing.md) in
// modules outside the repository, run it, and check the output the pages
// show, so that a newcomer who copies them gets what they promise.
package tutorials
