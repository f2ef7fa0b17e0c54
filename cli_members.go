package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"

	"masterorder/node"
)

// members: add, promote or remove a box of a running store.

const membersUsage = `usage:
  masterorder members add     --url URL --id ID --raft-addr HOST:PORT --http-addr HOST:PORT [--voter=false] [--password PW]
  masterorder members promote --url URL --id ID [--password PW]
  masterorder members remove  --url URL --id ID [--force] [--password PW]
URL is any member's base URL; the password may come from $` + passwordEnv + `.
`

func cmdMembers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "add" && args[0] != "remove" && args[0] != "promote") {
		fmt.Fprint(stderr, membersUsage)
		return usageError{"members needs add, remove or promote"}
	}
	op := args[0]
	fs := flag.NewFlagSet("members "+op, flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "any member's base URL, e.g. http://192.168.1.10:8080")
	password := fs.String("password", "", "staff password (default $"+passwordEnv+")")
	id := fs.String("id", "", "the member's node id")
	raftAddr := fs.String("raft-addr", "", "add: the new box's raft_addr")
	httpAddr := fs.String("http-addr", "", "add: the new box's http_addr")
	voter := fs.Bool("voter", true, "add: as a voter (false: a non-voter, to promote once caught up)")
	force := fs.Bool("force", false, "remove: skip the check that the voters left still answer")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{err.Error()}
	}
	if *url == "" || *id == "" {
		return usageError{"members " + op + " needs --url and --id"}
	}
	if op == "add" && (*raftAddr == "" || *httpAddr == "") {
		return usageError{"members add needs --raft-addr and --http-addr"}
	}
	c, err := staffClient(ctx, *url, *password)
	if err != nil {
		return err
	}
	var out struct {
		Nodes []node.MemberStatus `json:"nodes"`
	}
	switch op {
	case "add":
		err = c.call(ctx, http.MethodPost, "/api/staff/cluster/members",
			map[string]any{"id": *id, "raftAddr": *raftAddr, "httpAddr": *httpAddr, "voter": *voter}, &out)
	case "promote":
		err = c.call(ctx, http.MethodPost, "/api/staff/cluster/members/"+*id+"/promote", nil, &out)
	case "remove":
		path := "/api/staff/cluster/members/" + *id
		if *force {
			path += "?force=true"
		}
		err = c.call(ctx, http.MethodDelete, path, nil, &out)
	}
	if err != nil {
		return fmt.Errorf("members %s %s: %w", op, *id, err)
	}
	fmt.Fprintf(stdout, "%-8s %-22s %-22s %s\n", "ID", "HTTP", "RAFT", "SUFFRAGE")
	for _, m := range out.Nodes {
		fmt.Fprintf(stdout, "%-8s %-22s %-22s %s\n", m.ID, m.HTTPAddr, m.RaftAddr, m.Suffrage)
	}
	return nil
}
