package cli

import (
	"context"
	"fmt"
	"net/http"

	"masterorder/node"
)

// members: add, promote or remove a box of a running store.
var membersCommand = command{
	name:  "members",
	usage: "masterorder members add|remove|promote --url URL --id ID [...]   (masterorder members -h)\n",
	run:   members,
}

// membersUsage is `masterorder members -h` (and what a missing or unknown
// subcommand prints): one flag set serves the three.
const membersUsage = `usage:
  masterorder members add     --url URL --id ID --raft-addr HOST:PORT --http-addr HOST:PORT [--voter=false] [--password PW]
  masterorder members promote --url URL --id ID [--password PW]
  masterorder members remove  --url URL --id ID [--force] [--password PW]
URL is any member's base URL; the password may come from $` + passwordEnv + `.
`

func members(ctx context.Context, args []string, e env) error {
	if len(args) == 0 || (args[0] != "add" && args[0] != "remove" && args[0] != "promote") {
		fmt.Fprint(e.stderr, membersUsage)
		return badUsage("members needs add, remove or promote")
	}
	op := args[0]
	fs := e.flags("members " + op)
	url := fs.String("url", "", "any member's base URL, e.g. http://192.168.1.10:8080")
	password := fs.String("password", "", "staff password (default $"+passwordEnv+")")
	id := fs.String("id", "", "the member's node id")
	raftAddr := fs.String("raft-addr", "", "add: the new box's raft_addr")
	httpAddr := fs.String("http-addr", "", "add: the new box's http_addr")
	voter := fs.Bool("voter", true, "add: as a voter (false: a non-voter, to promote once caught up)")
	force := fs.Bool("force", false, "remove: skip the check that the voters left still answer")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if *url == "" || *id == "" {
		return badUsage("members " + op + " needs --url and --id")
	}
	if op == "add" && (*raftAddr == "" || *httpAddr == "") {
		return badUsage("members add needs --raft-addr and --http-addr")
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
	fmt.Fprintf(e.stdout, "%-8s %-22s %-22s %s\n", "ID", "HTTP", "RAFT", "SUFFRAGE")
	for _, m := range out.Nodes {
		fmt.Fprintf(e.stdout, "%-8s %-22s %-22s %s\n", m.ID, m.HTTPAddr, m.RaftAddr, m.Suffrage)
	}
	return nil
}
