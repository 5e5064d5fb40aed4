package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Placeholder until the diff command lands.
func newDiffCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "diff",
		Short:  "diff (not yet implemented)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("diff is not implemented yet")
		},
	}
}
