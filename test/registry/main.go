// registry is the CNCF Distribution registry (github.com/distribution/distribution/v3) with only
// the filesystem storage driver and htpasswd authentication linked in, for statelet's tests of
// private image pulls:
//
//	registry serve CONFIG.yml       upstream's own command (cmd/registry/main.go does the same
//	                                with every driver imported)
//	registry htpasswd USER          reads a password on stdin and prints `USER:<bcrypt hash>`, the
//	                                line the htpasswd access controller accepts (it reads bcrypt
//	                                entries only: registry/auth/htpasswd/htpasswd.go)
//
// go.mod also pins go-containerregistry's crane (a `tool` line), which the tests push images with.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	"github.com/spf13/cobra"
	"golang.org/x/crypto/bcrypt"
)

var htpasswdCmd = &cobra.Command{
	Use:   "htpasswd USER",
	Short: "prints an htpasswd line for USER with the bcrypt hash of the password read from stdin",
	Args:  cobra.ExactArgs(1),
	RunE: func(cmd *cobra.Command, args []string) error {
		if strings.Contains(args[0], ":") {
			return fmt.Errorf("a user name cannot contain ':'")
		}
		password, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil && password == "" {
			return fmt.Errorf("reading the password from stdin: %w", err)
		}
		hash, err := bcrypt.GenerateFromPassword([]byte(strings.TrimSuffix(password, "\n")), bcrypt.DefaultCost)
		if err != nil {
			return err
		}
		fmt.Printf("%s:%s\n", args[0], hash)
		return nil
	},
}

func main() {
	registry.RootCmd.AddCommand(htpasswdCmd)
	if err := registry.RootCmd.Execute(); err != nil {
		os.Exit(1)
	}
}
