"""The section pool both agent hosts use (the gateway, and orchestration on its own): sections, launchers, the gate."""
