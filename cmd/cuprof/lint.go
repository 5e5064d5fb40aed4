package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Placeholder until the lint command lands.
func newLintCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "lint",
		Short:  "lint (not yet implemented)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("lint is not implemented yet")
		},
	}
}
