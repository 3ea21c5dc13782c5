"""A deployment for a whole test module: sites and keys in the test database, and the deployed
server in front of it (`launch_server(deploy_config=True)`). Started once per module (a server
costs ~3 s to start); the tables are emptied when the module is done."""



