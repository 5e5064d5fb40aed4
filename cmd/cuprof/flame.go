package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Placeholder until the flame command lands.
func newFlameCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "flame",
		Short:  "flame (not yet implemented)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("flame is not implemented yet")
		},
	}
}
