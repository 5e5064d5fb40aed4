package main

// version is cuprof's version, set at release time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"
