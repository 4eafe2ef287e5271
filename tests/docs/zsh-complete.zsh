#!/usr/bin/env zsh
# Prints the completions zsh offers for a command line, one per line.
#
#   zsh-complete.zsh COMPLETION_DIR 'bufferlock --ca'
#
# zsh completes only inside a line editor, so this starts an interactive zsh
# (zsh -f: no user start-up files) in a pseudo-terminal with zpty, loads
# compinit with COMPLETION_DIR first in $fpath, types the line and a Tab, and
# reads back what the completion functions passed to compadd: compadd is
# wrapped to print each match (after zsh's own matching against the word at
# the cursor) between two marker lines. This is the technique of the
# "zsh-capture-completion" script, cut down. Exit status: 0 when the markers
# were seen, 2 when zsh did not answer (the caller also bounds it with
# timeout(1)).
emulate -L zsh
zmodload zsh/zpty || { print -u2 'zsh/zpty is not available'; exit 3 }

local dir=${1:?completion directory} line=${2?command line}
local home=${TMPDIR:-/tmp}/zsh-complete.$$
mkdir -p $home || exit 3
trap 'rm -rf -- $home' EXIT

# The start-up code of the inner shell; "ready" tells that it ran.
local init=$home/init.zsh
cat >$init <<EOF
PROMPT= RPROMPT=
unsetopt beep
fpath=(${(q)dir} \$fpath)
autoload -Uz compinit
compinit -u -D
zstyle ':completion:*' list-grouped false
zstyle ':completion:*' insert-tab false
zstyle ':completion:*' list-separator ''
# Never run a command: Return does nothing, Tab completes.
bindkey '^M' undefined-key
bindkey '^J' undefined-key
bindkey '^I' complete-word
_capture_marker() { print -r -- \$'\\x1fMARK\\x1f' }
compprefuncs=(_capture_marker)
comppostfuncs=(_capture_marker exit)
compadd() {
  # Calls that only ask for the list (-O, -A, -D) are not offers.
  if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\\ * ]]; then
    builtin compadd "\$@"
    return
  fi
  local -a __hits
  builtin compadd -A __hits "\$@"
  local __h
  for __h in \$__hits; do print -r -- "HIT:\$__h"; done
  builtin compadd "\$@"
}
print ready
EOF

zpty bl_capture zsh -f -i || exit 3
zpty -w bl_capture "HOME=${(q)home}; source ${(q)init}"
local out
# Wait for "ready" (at most ~100 reads of what the pty echoes).
integer n=0
while zpty -r bl_capture out; do
  [[ $out == ready* ]] && break
  (( ++n > 100 )) && { print -u2 'zsh did not start'; zpty -d bl_capture; exit 2 }
done
zpty -w -n bl_capture "$line"$'\t'

integer marks=0
local text
while zpty -r bl_capture out; do
  text+=$out
  [[ $out == *$'\x1f'MARK$'\x1f'* ]] && (( ++marks ))
  (( marks >= 2 )) && break
done
zpty -d bl_capture 2>/dev/null
(( marks >= 2 )) || { print -u2 'no completion output'; exit 2 }
local l
for l in ${(f)text}; do
  l=${l%$'\r'}
  [[ $l == HIT:* ]] && print -r -- ${l#HIT:}
done
exit 0
