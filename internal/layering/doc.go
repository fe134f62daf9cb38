// Package layering holds the test that keeps rein's packages in their
// layers (docs/architecture.md): the decision layer never imports the execution
// layer, the execution layer never learns why a plan was allowed, and the
// boundary imports neither side. It has no code of its own and must not be
// imported.
package layering
