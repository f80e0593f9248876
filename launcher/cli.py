import click

@click.command()
def cli():
    click.echo("launcher")

def main():
    cli()
