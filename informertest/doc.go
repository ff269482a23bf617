// Package informertest is test support for code that uses the informer
// package, like client-go's tools/cache/testing: a scripted, in-memory
// ListerWatcher ([FakeListerWatcher]) that an informer, a Reflector or a
// factory-less controller can run against without an API server.
//
// It does not import the informer package (so that the informer package's
// own tests can use it); its types satisfy the informer package's
// interfaces.
package informertest
