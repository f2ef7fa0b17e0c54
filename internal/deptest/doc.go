// Package deptest holds the module's import rules as a test: for every
// package of masterorder, the packages of masterorder it may import
// (deptest_test.go). An import the table does not allow, a package it
// does not know, and a graph docs/architecture.md states otherwise each
// fail the test. It has no code the binary runs.
package deptest
