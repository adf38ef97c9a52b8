#!/usr/bin/env python3
# Reads docker/compose.yaml, checks that it describes the demo scripts/container-demo.sh runs and
# checks, and prints shell assignments (addresses, MACs, capabilities, commands, what ndperf's
# tables must show) for it. Both engines' runs and checks come from these, so the Docker and
# podman demos cannot drift apart. Exit status 1 with the reason when the file is not the demo.
# Usage: compose_plan.py COMPOSE_FILE
import ipaddress, shlex, sys, yaml

path = sys.argv[1]
with open(path) as f:
    doc = yaml.safe_load(f)

def need(ok, what):
    if not ok:
        sys.exit(f"{path}: {what}")

need(isinstance(doc, dict), "not a YAML mapping")
services = doc.get("services") or {}
need(set(services) == {"server", "client"}, f"services are {sorted(services)}, expected client and server")
networks = doc.get("networks") or {}
need(len(networks) == 1, "expected exactly one network")
(net_name, net), = networks.items()
need(net.get("internal") is True, f"network {net_name} must be internal: the demo talks to nothing else")
subnets = [c["subnet"] for c in (net.get("ipam") or {}).get("config", [])]
need(len(subnets) == 1, f"network {net_name}: expected one ipam subnet")
subnet = ipaddress.ip_network(subnets[0])
need(subnet.subnet_of(ipaddress.ip_network("198.18.0.0/15")), f"subnet {subnet} is outside 198.18.0.0/15")
print(f"kSubnet={subnet}")
print(f"kComposeNetwork={net_name}")
need("name" not in doc, "a top-level name: Debian 12's docker-compose 1.29 refuses it (give -p instead)")

def words(cmd):
    # ["sh", "-c", "a && b"] -> [["a", ...], ["b", ...]]
    need(isinstance(cmd, list) and cmd[:2] == ["sh", "-c"] and len(cmd) == 3, "command must be [sh, -c, '...']")
    return [shlex.split(part) for part in cmd[2].split("&&")]

def option(argv, name):
    need(name in argv and argv.index(name) + 1 < len(argv), f"{' '.join(argv)}: no {name}")
    return argv[argv.index(name) + 1]

ips = {}
for name, svc in services.items():
    need("network_mode" not in svc and not svc.get("privileged"), f"{name}: no host network, not privileged")
    need(sorted(svc.get("cap_add", [])) == ["IPC_LOCK", "NET_ADMIN", "NET_RAW"],
         f"{name}: cap_add must be exactly NET_RAW, NET_ADMIN, IPC_LOCK")
    need(list(svc.get("networks", {})) == [net_name], f"{name}: must be on network {net_name} only")
    ip = ipaddress.ip_address(svc["networks"][net_name]["ipv4_address"])
    need(ip in subnet, f"{name}: {ip} is not in {subnet}")
    ips[name] = str(ip)
    mac = svc.get("mac_address", "")
    need(len(mac.split(":")) == 6, f"{name}: mac_address missing")
    print(f"k{name.capitalize()}Ip={ip}")
    print(f"k{name.capitalize()}Mac={mac}")
    print(f"k{name.capitalize()}Caps={','.join(svc['cap_add'])}")
    print(f"k{name.capitalize()}Cmd=({' '.join(shlex.quote(w) for w in svc['command'])})")

expected = {"server": (["ndperf", "--server"], ["nd_demo", "--role", "passive"]),
            "client": (["ndperf", "--client"], ["nd_demo", "--role", "active"])}
for name, (perf, demo) in expected.items():
    steps = words(services[name]["command"])
    need(len(steps) == 2, f"{name}: expected two commands, ndperf then nd_demo")
    for argv, want in zip(steps, (perf, demo)):
        need(argv[0] == want[0] and all(w in argv for w in want[1:]), f"{name}: expected {' '.join(want)} ...")
        need(option(argv, "--ip") == ips[name], f"{name}: {argv[0]} --ip must be the container's {ips[name]}")
        need(option(argv, "--dev").endswith("iface=eth0"), f"{name}: {argv[0]} must use eth0")
client_perf, client_demo = words(services["client"]["command"])
need(option(client_perf, "--client") == ips["server"], "client: ndperf --client must name the server")
need(option(client_demo, "--peer") == ips["server"], "client: nd_demo --peer must name the server")
# What the ndperf client's tables must show: one row per test, each with -n iterations.
tests = option(client_perf, "-T").split(",")
print(f"kPerfTests={len(tests)}")
print(f"kPerfIters={int(option(client_perf, '-n'))}")
