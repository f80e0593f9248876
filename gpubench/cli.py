def main():
    import gpubench.workloads, gpubench.launcher.cli
    print(gpubench.workloads.__file__)
