from gitsleep.cli import main

main()
