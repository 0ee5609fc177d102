"""What the scripts that build peers' code from their public repositories share
(ross_models.py, rootsim_models.py): a command that must succeed, and a repository's tree at
a commit in a scratch directory (a URL is cloned there once; a local git directory is read
as it is). Nothing fetched is ever copied into this repository."""
import os
import shutil
import subprocess
import sys


def sh(*cmd, cwd=None, env=None):
    """Run cmd; its stdout, or exit with its output if it failed."""
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p.stdout


def fetch(repo, commit, scratch, name):
    """The tree of repo (URL or git dir) at commit, in scratch/name."""
    dst = os.path.join(scratch, name)
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    git_dir = repo if os.path.isdir(repo) else os.path.join(scratch, name + ".git")
    if not os.path.isdir(git_dir):
        sh("git", "clone", "--bare", "--quiet", repo, git_dir)
    arch = subprocess.run(["git", "--git-dir", git_dir, "archive", commit],
                          capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", dst], input=arch, check=True)
    return dst
