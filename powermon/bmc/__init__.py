"""Node power from the BMC: Redfish (and IPMI DCMI), slow averaged readings handled as such (issue 24)."""
