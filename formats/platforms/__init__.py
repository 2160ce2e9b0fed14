"""Platform profiles (TOML, shipped beside this module) and cost tables as machines."""
