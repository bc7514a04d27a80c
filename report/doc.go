// Package report renders what the other packages compute: ingest
// summaries, topologies and replay results, as terminal tables, Markdown,
// JSON and HTML. It computes no figures of its own and never prints except
// to the io.Writer it is given.
package report
