package main

import (
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/retryaudit/retryaudit/degrade"
	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/replay/audit"
	"github.com/retryaudit/retryaudit/replay/policyfile"
)

// policyFormats are the vocabularies --policy-format writes, where a
// command has that flag.
func policyFormats() []string {
	var names []string
	for _, f := range policyfile.Formats() {
		names = append(names, string(f))
	}
	return names
}

// registerCompletions adds value completion to the flags of every
// subcommand that has them (cobra's completion command generates the shell
// scripts): --format from the values its help lists, --policy from the
// policy names and modifiers, --degrade from the fault kinds, --fail-on
// from the finding ids and policies, --policy-format from its vocabularies.
func registerCompletions(root *cobra.Command) {
	for _, c := range root.Commands() {
		if f := c.Flags().Lookup("format"); f != nil {
			values := formatValues(f.Usage)
			_ = c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
		}
		if c.Flags().Lookup("policy") != nil {
			_ = c.RegisterFlagCompletionFunc("policy", completePolicy)
		}
		if c.Flags().Lookup("degrade") != nil {
			_ = c.RegisterFlagCompletionFunc("degrade", completeDegrade)
		}
		if c.Flags().Lookup("fail-on") != nil {
			_ = c.RegisterFlagCompletionFunc("fail-on", completeFailOn)
		}
		if c.Flags().Lookup("policy-format") != nil {
			_ = c.RegisterFlagCompletionFunc("policy-format", cobra.FixedCompletions(policyFormats(), cobra.ShellCompDirectiveNoFileComp))
		}
	}
}

var formatList = regexp.MustCompile(`format: ([a-z, ]+?)(?: \(|$)`)

// formatValues reads the values out of a --format usage string, which reads
// "output format: table, markdown or json".
func formatValues(usage string) []string {
	m := formatList.FindStringSubmatch(usage)
	if m == nil {
		return nil
	}
	return strings.FieldsFunc(strings.ReplaceAll(m[1], " or ", ","), func(r rune) bool { return r == ',' || r == ' ' })
}

// completePolicy offers the base policies and modifiers, and after "BASE+"
// the modifiers.
func completePolicy(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	bases, mods := replay.PolicyNames()
	if i := strings.LastIndexByte(toComplete, '+'); i >= 0 {
		var out []string
		for _, m := range mods {
			out = append(out, toComplete[:i+1]+m)
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	// A modifier alone applies to the observed policies ("budget").
	return append(bases, mods...), cobra.ShellCompDirectiveNoFileComp
}

// completeDegrade offers each fault kind with its example spec.
func completeDegrade(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, k := range degrade.Kinds() {
		out = append(out, k.Example()+"\t"+k.Form())
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// completeFailOn offers finding:ID for every finding id, metastable:POLICY,
// uncalibrated and the amplification threshold.
func completeFailOn(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	out := []string{"amplification>", "metastable:any", "uncalibrated"}
	for _, id := range slices.Concat(graph.FindingIDs(), policyfile.FindingIDs()) {
		out = append(out, "finding:"+id)
	}
	for _, p := range audit.StandardPolicies {
		out = append(out, "metastable:"+p)
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}
